import type { AudioCapabilities, CatalogModel, CatalogRoute, Price } from './catalog-types';

/** The vendor a route's model record names: the service itself serves an alias, through one of its targets. */
export const ROUTE_VENDOR = 'switchyard';

/**
 * The models a route can be served by, in the order its targets declare them, a target that is a route expanded in
 * place, each model once. The loader has refused unknown targets and cycles.
 */
export function routeLeaves(
  code: string,
  routes: ReadonlyMap<string, CatalogRoute>,
  models: ReadonlyMap<string, CatalogModel>,
): CatalogModel[] {
  const found = new Map<string, CatalogModel>();
  const walk = (current: string) => {
    const model = models.get(current);
    if (model) {
      found.set(model.code, model);
      return;
    }
    for (const target of routes.get(current)?.targets ?? []) walk(target.model);
  };
  walk(code);
  return [...found.values()];
}

/**
 * A route as a model record: the capabilities its available targets all share (all its targets when none is
 * available), the smallest limits among them, and a price that is each side's dearest (per unit) among all of its
 * targets, so a hold placed at it covers whichever target serves.
 */
export function routeModelOf(
  route: CatalogRoute,
  leaves: CatalogModel[],
  available: (model: CatalogModel) => boolean,
): CatalogModel {
  const usable = leaves.filter(available);
  const shared = usable.length > 0 ? usable : leaves;
  const every = (has: (model: CatalogModel) => boolean) => shared.every(has);
  // 0 states no limit: the smallest stated one.
  const smallest = (of: (model: CatalogModel) => number) => {
    const stated = shared.map(of).filter((limit) => limit > 0);
    return stated.length > 0 ? Math.min(...stated) : 0;
  };
  return {
    code: route.code,
    vendor: ROUTE_VENDOR,
    upstreamId: route.code,
    name: route.name,
    type: route.type,
    vision: every((model) => model.vision),
    streaming: every((model) => model.streaming),
    functionCalling: every((model) => model.functionCalling),
    structuredOutputs: every((model) => model.structuredOutputs),
    maxOutput: smallest((model) => model.maxOutput),
    contextWindow: smallest((model) => model.contextWindow),
    isDefault: false,
    webVisible: true,
    protocols: shared[0].protocols.filter((protocol) => every((model) => model.protocols.includes(protocol))),
    price: dearestPrice(leaves.map((model) => model.price)),
    audio: sharedAudio(shared.map((model) => model.audio)),
    route: { ...route, targets: route.targets.map((target) => ({ ...target })) },
  };
}

/** Input and output each at the highest per-unit rate among the prices (the units agree: the loader checks types). */
export function dearestPrice(prices: (Price | null)[]): Price | null {
  const known = prices.filter((price): price is Price => price !== null);
  if (known.length === 0) return null;
  const count = Math.max(...known.map((price) => price.count));
  return {
    unit: known[0].unit,
    count,
    input: Math.max(...known.map((price) => (price.input / price.count) * count)),
    output: Math.max(...known.map((price) => (price.output / price.count) * count)),
  };
}

function sharedAudio(audio: (AudioCapabilities | null)[]): AudioCapabilities | null {
  const [first] = audio;
  if (!first) return null;
  if ('voices' in first) {
    const speech = audio as { voices: string[]; maxInputCharacters: number }[];
    return {
      voices: first.voices.filter((voice) => speech.every((other) => other.voices.includes(voice))),
      maxInputCharacters: Math.min(...speech.map((other) => other.maxInputCharacters)),
    };
  }
  return { asynchronous: (audio as { asynchronous: boolean }[]).every((other) => other.asynchronous) };
}
