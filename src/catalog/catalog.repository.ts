import { sql } from 'kysely';
import type { Db } from '../db/database';
import type { CatalogModel, CatalogRoute, CatalogVendor } from './catalog-types';
import { audioToWire } from './catalog.wire';
import type { CatalogModelRow, CatalogPriceRow, CatalogRouteRow, CatalogVendorRow } from './catalog.table';

/** Any stable number: serialises catalog syncs of processes starting together (api + workers), and route changes. */
export const SYNC_LOCK = 7_310_251_122;

/**
 * Mirrors the catalog file into catalog_vendors / catalog_models / catalog_prices in one transaction:
 * upsert everything in the file, delete what it no longer has. Readers never see a half-synced catalog,
 * and a failed sync leaves the previous one in place.
 */
export async function syncCatalog(
  db: Db,
  catalog: { vendors: CatalogVendor[]; models: CatalogModel[]; routes?: CatalogRoute[] },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${SYNC_LOCK})`.execute(trx);

    const vendorCodes = catalog.vendors.map((vendor) => vendor.code);
    const modelCodes = catalog.models.map((model) => model.code);
    const priced = catalog.models.filter((model) => model.price !== null);

    // Children first, so a model moving between vendors or a removed vendor never trips a foreign key.
    const pricedCodes = priced.map((model) => model.code);
    const prices = trx.deleteFrom('catalog_prices');
    await (pricedCodes.length > 0 ? prices.where('model_code', 'not in', pricedCodes) : prices).execute();
    const models = trx.deleteFrom('catalog_models');
    await (modelCodes.length > 0 ? models.where('code', 'not in', modelCodes) : models).execute();
    const vendors = trx.deleteFrom('catalog_vendors');
    await (vendorCodes.length > 0 ? vendors.where('code', 'not in', vendorCodes) : vendors).execute();

    if (catalog.vendors.length > 0) {
      await trx
        .insertInto('catalog_vendors')
        .values(
          catalog.vendors.map((vendor, position) => ({
            code: vendor.code,
            name: vendor.name,
            model_types: JSON.stringify(vendor.modelTypes),
            position,
          })),
        )
        .onConflict((conflict) =>
          conflict.column('code').doUpdateSet((eb) => ({
            name: eb.ref('excluded.name'),
            model_types: eb.ref('excluded.model_types'),
            position: eb.ref('excluded.position'),
          })),
        )
        .execute();
    }
    if (catalog.models.length > 0) {
      await trx
        .insertInto('catalog_models')
        .values(
          catalog.models.map((model, position) => ({
            code: model.code,
            vendor_code: model.vendor,
            upstream_id: model.upstreamId,
            name: model.name,
            type: model.type,
            vision: model.vision,
            streaming: model.streaming,
            function_calling: model.functionCalling,
            structured_outputs: model.structuredOutputs,
            max_output: model.maxOutput,
            context_window: model.contextWindow,
            is_default: model.isDefault,
            web_visible: model.webVisible,
            protocols: JSON.stringify(model.protocols),
            audio: JSON.stringify(audioToWire(model.audio)),
            position,
          })),
        )
        .onConflict((conflict) =>
          conflict.column('code').doUpdateSet((eb) => ({
            vendor_code: eb.ref('excluded.vendor_code'),
            upstream_id: eb.ref('excluded.upstream_id'),
            name: eb.ref('excluded.name'),
            type: eb.ref('excluded.type'),
            vision: eb.ref('excluded.vision'),
            streaming: eb.ref('excluded.streaming'),
            function_calling: eb.ref('excluded.function_calling'),
            structured_outputs: eb.ref('excluded.structured_outputs'),
            max_output: eb.ref('excluded.max_output'),
            context_window: eb.ref('excluded.context_window'),
            is_default: eb.ref('excluded.is_default'),
            web_visible: eb.ref('excluded.web_visible'),
            protocols: eb.ref('excluded.protocols'),
            audio: eb.ref('excluded.audio'),
            position: eb.ref('excluded.position'),
          })),
        )
        .execute();
    }
    // Routes reference nothing by key (a target may be a route): the file's replaced whole, in file order. An
    // operator's route (api-decisions 34) is kept, unless the file now has a route of its code: the file wins.
    const routes = catalog.routes ?? [];
    const fileCodes = routes.map((route) => route.code);
    await trx
      .deleteFrom('catalog_routes')
      .where((eb) =>
        fileCodes.length > 0
          ? eb.or([eb('origin', '=', 'catalog'), eb('code', 'in', fileCodes)])
          : eb('origin', '=', 'catalog'),
      )
      .execute();
    if (routes.length > 0) {
      await trx
        .insertInto('catalog_routes')
        .values(
          routes.map((route, position) => ({
            code: route.code,
            name: route.name,
            type: route.type,
            strategy: route.strategy,
            targets: JSON.stringify(route.targets),
            position,
            origin: 'catalog' as const,
          })),
        )
        .execute();
    }
    if (priced.length > 0) {
      await trx
        .insertInto('catalog_prices')
        .values(priced.map((model) => ({ model_code: model.code, ...model.price! })))
        .onConflict((conflict) =>
          conflict.column('model_code').doUpdateSet((eb) => ({
            unit: eb.ref('excluded.unit'),
            count: eb.ref('excluded.count'),
            input: eb.ref('excluded.input'),
            output: eb.ref('excluded.output'),
          })),
        )
        .execute();
    }
  });
}

/** The mirrored rows, in file order (operators' inspection and tests). */
export async function readCatalogTables(db: Db): Promise<{
  vendors: CatalogVendorRow[];
  models: CatalogModelRow[];
  prices: CatalogPriceRow[];
  routes: CatalogRouteRow[];
}> {
  const [vendors, models, prices, routes] = await Promise.all([
    db.selectFrom('catalog_vendors').selectAll().orderBy('position').execute(),
    db.selectFrom('catalog_models').selectAll().orderBy('position').execute(),
    db.selectFrom('catalog_prices').selectAll().orderBy('model_code').execute(),
    readRouteRows(db),
  ]);
  return { vendors, models, prices, routes };
}

/** The routes' rows: the file's in file order, then operators' in the order they were created. */
export function readRouteRows(db: Db) {
  return db.selectFrom('catalog_routes').selectAll().orderBy('position').execute();
}

/** An operator's routes come after any file's: their positions start here. */
export const ADMIN_ROUTE_POSITIONS = 1_000_000;
