import type { CatalogModel } from '../catalog/catalog-types';
import type { Metrics } from '../metrics/metrics';
import type { GenerateTextRequest, GenerateTextResult, LanguageModel, TextStreamPart } from '../providers/provider';
import { countFailover, countServed, failoverReason } from './failover';
import { planRoute, type RouteCatalog } from './route-plan';

export interface RoutingDeps {
  catalog: RouteCatalog;
  providers: { languageModel(vendor: string): LanguageModel };
  metrics?: Pick<Metrics, 'routeFailovers' | 'routeServed'>;
}

/** A language model call to a model or a route, and the catalog model that served it (known once output began). */
export interface ServedLanguageModel {
  model: LanguageModel;
  /** The target that answered; before that, the first target to be tried. */
  served(): CatalogModel;
}

/**
 * The language model a request names, for callers whose call is not a durable job (chat completions): a model's own;
 * for a route (api-decisions 32), one that tries the route's targets in the order planRoute gives for a fresh draw,
 * moving on at once (no retries, no backoff: the next vendor is the retry) when a target fails before its first
 * output with a failure that is not the request's fault. The last target is called with the usual retries. A failure
 * after output began is final. Each target is called with its own model id; `request.model` is ignored.
 */
export function languageModelFor(
  model: CatalogModel,
  deps: RoutingDeps,
  draw: () => number = Math.random,
): ServedLanguageModel {
  if (!model.route) {
    const own = deps.providers.languageModel(model.vendor);
    return { model: own, served: () => model };
  }
  const route = model.route.code;
  const targets = planRoute(deps.catalog, route, draw()).map((code) => deps.catalog.getModel(code)!);
  let served = targets[0];

  /** Each target in turn until one produces a first result; `attempt` gets the target's request. */
  async function firstAnswering<T>(
    attempt: (target: CatalogModel, request: Partial<GenerateTextRequest>) => Promise<T>,
  ) {
    for (let index = 0; ; index += 1) {
      const target = targets[index];
      const last = index === targets.length - 1;
      try {
        const result = await attempt(target, { model: target.upstreamId, ...(last ? {} : { maxRetries: 0 }) });
        served = target;
        countServed(deps.metrics, route, target.code);
        return result;
      } catch (error) {
        const reason = failoverReason(error);
        if (last || !reason) throw error;
        countFailover(deps.metrics, { route, from: target.code, to: targets[index + 1].code, reason });
      }
    }
  }

  const routed: LanguageModel = {
    continuesReplies: targets.every((target) => deps.providers.languageModel(target.vendor).continuesReplies === true),
    generateText: (request): Promise<GenerateTextResult> =>
      firstAnswering((target, own) => deps.providers.languageModel(target.vendor).generateText({ ...request, ...own })),
    async *streamText(request): AsyncGenerator<TextStreamPart> {
      const opened = await firstAnswering(async (target, own) => {
        const parts = deps.providers.languageModel(target.vendor).streamText({ ...request, ...own });
        const iterator = parts[Symbol.asyncIterator]();
        return { iterator, first: await iterator.next() };
      });
      const { iterator } = opened;
      try {
        for (let step = opened.first; !step.done; step = await iterator.next()) yield step.value;
      } finally {
        await iterator.return?.();
      }
    },
  };
  return { model: routed, served: () => served };
}
