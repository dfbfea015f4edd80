import type { Db } from '../db/database';
import { ApiError, invalidRequest, notFound, type ErrorArea } from '../errors';
import type { Availability, CatalogModel, CatalogRoute, CatalogVendor, ModelType } from './catalog-types';
import { loadCatalogFile, type CatalogDefinition } from './catalog.loader';
import { syncCatalog } from './catalog.repository';
import { resolveVendorConnection } from './vendor-connection';
import { routeModelOf, routeLeaves } from './route-model';

/** The areas whose requests may name a route (issue 36): the others refuse an alias with a clear message. */
const ROUTED_AREAS: ReadonlySet<ErrorArea> = new Set([
  'response',
  'chat',
  'embedding',
  'audio',
  'transcription',
  'run',
]);

export interface CatalogOptions {
  /** config.catalogPath. */
  path: string;
  /** config.providers.settings: decides which vendors are available. */
  settings: Readonly<Record<string, string>>;
  /** When given, the catalog tables are synced to the file before the catalog is returned. */
  db?: Db;
}

export interface Catalog {
  /** The file the catalog was loaded from. */
  readonly path: string;
  /** A model of the catalog (never a route: see resolveModel). */
  getModel(code: string): CatalogModel | undefined;
  /** A model, or a route's model record (`route` set): what a request's model code names. */
  resolveModel(code: string): CatalogModel | undefined;
  getRoute(code: string): CatalogRoute | undefined;
  /** The routes served, in order: the file's, then those operators created at run time (api-decisions 34). */
  listRoutes(): readonly CatalogRoute[];
  /**
   * Serves `routes` from now on instead (validated by the caller: route-admin.ts). A request resolves its model
   * once, and a Response's plan is a recorded step, so work under way keeps the routes it started with.
   */
  replaceRoutes(routes: readonly CatalogRoute[]): void;
  /** The models a route can be served by, available or not, in the order its targets declare them (nested routes expanded). */
  routeTargets(code: string): CatalogModel[];
  /** File order: the models, then the routes' model records (except under a vendor filter). */
  listModels(filter?: { type?: ModelType; vendor?: string }): CatalogModel[];
  getVendor(code: string): CatalogVendor | undefined;
  listVendors(filter?: { type?: ModelType }): CatalogVendor[];
  vendorAvailability(vendor: CatalogVendor | string): Availability;
  modelAvailability(model: CatalogModel): Availability;
  /** 404 `model.not_found` (GET /v2/models/{code}). */
  requireModel(code: string): CatalogModel;
  /** 404 `vendor.not_found`. */
  requireVendor(code: string): CatalogVendor;
  /**
   * The model a request names, checked before any work starts: unknown → 400 `<area>.invalid_request`;
   * another type → 400 `<area>.invalid_request`; vendor not configured → 400 `model.not_available`
   * naming the missing setting. A route (in the areas that serve them) is usable when one of its targets is.
   */
  requireUsableModel(code: string, area: ErrorArea, type: ModelType): CatalogModel;
}

/** Loads, validates and (with `db`) syncs the catalog file; then answers from an in-memory snapshot. */
export async function createCatalog(options: CatalogOptions): Promise<Catalog> {
  const definition = loadCatalogFile(options.path);
  if (options.db) await syncCatalog(options.db, definition);
  return catalogFromDefinition(definition, options.settings);
}

/** A catalog over an already loaded definition (no file, no database): workers' tests and tools. */
export function catalogFromDefinition(
  definition: CatalogDefinition,
  settings: Readonly<Record<string, string>>,
): Catalog {
  const models = new Map(definition.models.map((model) => [model.code, freezeModel(model)]));
  const vendors = new Map(
    definition.vendors.map((vendor) => [vendor.code, Object.freeze({ ...vendor, modelTypes: [...vendor.modelTypes] })]),
  );
  // Settings are frozen for the life of the process, so availability is computed once.
  const availability = new Map<string, Availability>();
  for (const vendor of vendors.values()) {
    const { available, missing } = resolveVendorConnection(vendor, settings);
    availability.set(vendor.code, Object.freeze(missing ? { available, missing } : { available }));
  }

  function vendorAvailability(vendor: CatalogVendor | string): Availability {
    const code = typeof vendor === 'string' ? vendor : vendor.code;
    return availability.get(code) ?? { available: false };
  }

  // The routes served: the file's at first; replaced whole when an operator changes one at run time (route-admin.ts).
  let served = indexRoutes(definition.routes ?? []);
  function indexRoutes(list: readonly CatalogRoute[]) {
    const routes = new Map(list.map((route) => [route.code, route]));
    const leaves = new Map([...routes.keys()].map((code) => [code, routeLeaves(code, routes, models)]));
    const routeModels = new Map(
      [...routes.values()].map((route) => [
        route.code,
        freezeModel(
          routeModelOf(route, leaves.get(route.code)!, (model) => vendorAvailability(model.vendor).available),
        ),
      ]),
    );
    return { list: Object.freeze([...list]), routes, leaves, routeModels };
  }
  const routeAvailable = (code: string) =>
    served.leaves.get(code)!.some((model) => vendorAvailability(model.vendor).available);

  function modelAvailability(model: CatalogModel): Availability {
    if (model.route) return { available: routeAvailable(model.code) };
    return vendorAvailability(model.vendor);
  }

  function requireModel(code: string): CatalogModel {
    const model = models.get(code) ?? served.routeModels.get(code);
    if (!model) throw notFound('model', `No model with code "${code}". GET /v2/models lists the available models.`);
    return model;
  }

  function requireVendor(code: string): CatalogVendor {
    const vendor = vendors.get(code);
    if (!vendor) throw notFound('vendor', `No vendor with code "${code}". GET /v2/vendors lists the vendors.`);
    return vendor;
  }

  function requireUsableModel(code: string, area: ErrorArea, type: ModelType): CatalogModel {
    const route = served.routeModels.get(code);
    if (route) return requireUsableRoute(route, area, type);
    const model = models.get(code);
    if (!model)
      throw invalidRequest(area, `Unknown model "${code}". GET /v2/models?type=${type} lists the ${type} models.`);
    if (model.type !== type) {
      throw invalidRequest(area, `Model "${code}" is a ${model.type} model; this operation needs a ${type} model.`);
    }
    const { available, missing } = vendorAvailability(model.vendor);
    if (!available) {
      throw new ApiError(
        400,
        'model.not_available',
        `Model "${code}" is not available: vendor "${model.vendor}" is not configured${missing ? ` (set ${missing})` : ''}.`,
      );
    }
    return model;
  }

  function requireUsableRoute(route: CatalogModel, area: ErrorArea, type: ModelType): CatalogModel {
    if (route.type !== type) {
      throw invalidRequest(
        area,
        `Model "${route.code}" is a ${route.type} route; this operation needs a ${type} model.`,
      );
    }
    if (!ROUTED_AREAS.has(area)) {
      throw invalidRequest(
        area,
        `Model "${route.code}" is a route; this operation does not serve routes yet: name one of its models (${served.leaves
          .get(route.code)!
          .map((model) => model.code)
          .join(', ')}).`,
      );
    }
    if (!routeAvailable(route.code)) {
      throw new ApiError(
        400,
        'model.not_available',
        `Model "${route.code}" is not available: none of its targets' vendors is configured.`,
      );
    }
    return route;
  }

  return {
    path: definition.path,
    getModel: (code) => models.get(code),
    resolveModel: (code) => models.get(code) ?? served.routeModels.get(code),
    getRoute: (code) => served.routes.get(code),
    routeTargets: (code) => served.leaves.get(code) ?? [],
    listRoutes: () => served.list,
    replaceRoutes(routes) {
      served = indexRoutes(routes);
    },
    listModels: (filter = {}) =>
      [...models.values(), ...(filter.vendor ? [] : served.routeModels.values())].filter(
        (model) => (!filter.type || model.type === filter.type) && (!filter.vendor || model.vendor === filter.vendor),
      ),
    getVendor: (code) => vendors.get(code),
    listVendors: (filter = {}) =>
      [...vendors.values()].filter((vendor) => !filter.type || vendor.modelTypes.includes(filter.type)),
    vendorAvailability,
    modelAvailability,
    requireModel,
    requireVendor,
    requireUsableModel,
  };
}

function freezeModel(model: CatalogModel): CatalogModel {
  return Object.freeze({
    ...model,
    ...(model.route
      ? { route: Object.freeze({ ...model.route, targets: model.route.targets.map((t) => ({ ...t })) }) }
      : {}),
    protocols: Object.freeze([...model.protocols]) as string[],
    price: model.price ? Object.freeze({ ...model.price }) : null,
    audio: model.audio
      ? Object.freeze(
          'voices' in model.audio
            ? { ...model.audio, voices: Object.freeze([...model.audio.voices]) as string[] }
            : { ...model.audio },
        )
      : null,
  });
}
