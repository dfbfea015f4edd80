import type { AdminRoute, AudioCapabilities, Availability, CatalogModel, CatalogVendor, Price } from './catalog-types';

/** Model record (spec "Model record"): exactly these fields, in this order. */
export function modelToWire(model: CatalogModel, availability: Availability) {
  return {
    code: model.code,
    name: model.name,
    available: availability.available,
    vendor: model.vendor,
    type: model.type,
    vision: model.vision,
    streaming: model.streaming,
    function_calling: model.functionCalling,
    structured_outputs: model.structuredOutputs,
    max_output: model.maxOutput,
    context_window: model.contextWindow,
    default: model.isDefault,
    web_visible: model.webVisible,
    protocols: [...model.protocols],
    ...audioToWire(model.audio),
    // An alias (api-decisions 32): how it is served. Its vendor is the service itself.
    ...(model.route
      ? {
          route: {
            strategy: model.route.strategy,
            targets: model.route.targets.map((target) => ({ ...target })),
          },
        }
      : {}),
  };
}

/** The audio fields of a tts (`voices`, `max_input_characters`) or stt (`asynchronous`) model record. */
export function audioToWire(audio: AudioCapabilities | null) {
  if (!audio) return null;
  return 'voices' in audio
    ? { voices: [...audio.voices], max_input_characters: audio.maxInputCharacters }
    : { asynchronous: audio.asynchronous };
}

/** Vendor record: `{code, name, available, model_types}`. */
export function vendorToWire(vendor: CatalogVendor, availability: Availability) {
  return {
    code: vendor.code,
    name: vendor.name,
    available: availability.available,
    model_types: [...vendor.modelTypes],
  };
}

/** Price record: `input`/`output` kopecks per `count` `unit`s (api-decisions 10). */
export function priceToWire(price: Price) {
  return { unit: price.unit, count: price.count, input: price.input, output: price.output };
}

export type ModelWire = ReturnType<typeof modelToWire>;
export type VendorWire = ReturnType<typeof vendorToWire>;

/** A route as the admin API shows it (api-decisions 34): the catalog file's fields, where it comes from, and whether it is served. */
export function adminRouteToWire(route: AdminRoute) {
  return {
    object: 'route' as const,
    code: route.code,
    name: route.name,
    type: route.type,
    strategy: route.strategy,
    targets: route.targets.map((target) => ({ ...target })),
    origin: route.origin,
    served: route.served,
  };
}
