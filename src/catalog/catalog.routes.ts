import Router from '@koa/router';
import { parseInput } from '../http/validation';
import type { CatalogModel } from './catalog-types';
import { modelFilterSchema, vendorFilterSchema } from './catalog.schema';
import type { Catalog } from './catalog.service';
import { modelToWire, priceToWire, vendorToWire, type ModelWire } from './catalog.wire';

/** GET /v2/models, /v2/models/prices, /v2/models/{code}, /v2/vendors, /v2/vendors/{code}, /v2/vendors/{code}/models. */
export interface CatalogRoutesDeps {
  catalog: Catalog;
}

export function catalogRoutes(deps: CatalogRoutesDeps): Router {
  const { catalog } = deps;
  const router = new Router({ prefix: '/v2' });

  router.get('/models', (ctx) => {
    const { type } = parseInput(modelFilterSchema, ctx.query, 'model');
    ctx.body = modelsByCode(catalog, catalog.listModels({ type }));
  });

  // Registered before /models/:code so that "prices" is never read as a model code.
  router.get('/models/prices', (ctx) => {
    const { type } = parseInput(modelFilterSchema, ctx.query, 'model');
    const prices: Record<string, ReturnType<typeof priceToWire>> = {};
    for (const model of catalog.listModels({ type })) {
      // A route is billed at the price of the target that serves it (its own is only what holds are placed at).
      if (model.price && !model.route) prices[model.code] = priceToWire(model.price);
    }
    ctx.body = prices;
  });

  router.get('/models/:code', (ctx) => {
    const model = catalog.requireModel(ctx.params.code);
    ctx.body = modelToWire(model, catalog.modelAvailability(model));
  });

  router.get('/vendors', (ctx) => {
    const { type } = parseInput(vendorFilterSchema, ctx.query, 'vendor');
    ctx.body = catalog.listVendors({ type }).map((vendor) => vendorToWire(vendor, catalog.vendorAvailability(vendor)));
  });

  router.get('/vendors/:code', (ctx) => {
    const vendor = catalog.requireVendor(ctx.params.code);
    ctx.body = vendorToWire(vendor, catalog.vendorAvailability(vendor));
  });

  router.get('/vendors/:code/models', (ctx) => {
    const { type } = parseInput(modelFilterSchema, ctx.query, 'model');
    const vendor = catalog.requireVendor(ctx.params.code);
    ctx.body = modelsByCode(catalog, catalog.listModels({ type, vendor: vendor.code }));
  });

  return router;
}

/** api-decisions 1: an object keyed by model code, in catalog order. */
function modelsByCode(catalog: Catalog, models: CatalogModel[]): Record<string, ModelWire> {
  const result: Record<string, ModelWire> = {};
  for (const model of models) result[model.code] = modelToWire(model, catalog.modelAvailability(model));
  return result;
}
