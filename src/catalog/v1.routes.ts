import Router from '@koa/router';
import { toUnixSeconds } from '../time';
import { findAccountAndKey } from '../accounts/accounts.repository';
import { unauthorized } from '../errors';
import type { Db } from '../db/database';
import type { CatalogModel } from './catalog-types';
import type { Catalog } from './catalog.service';
import { modelToWire, vendorToWire } from './catalog.wire';

/**
 * Version 1 (api-decisions 7): models in an OpenAI-style list, vendors as in v2, and getMe.
 * POST /v1/chat/completions lives with the chat slice.
 */
export interface V1RoutesDeps {
  catalog: Catalog;
  db: Db;
}

export function v1Routes(deps: V1RoutesDeps): Router {
  const { catalog, db } = deps;
  const router = new Router({ prefix: '/v1' });

  router.get('/models', (ctx) => {
    ctx.body = { object: 'list', data: catalog.listModels().map((model) => v1Model(catalog, model)) };
  });

  router.get('/models/:code', (ctx) => {
    ctx.body = v1Model(catalog, catalog.requireModel(ctx.params.code));
  });

  router.get('/vendors', (ctx) => {
    ctx.body = catalog.listVendors().map((vendor) => vendorToWire(vendor, catalog.vendorAvailability(vendor)));
  });

  router.get('/vendors/:code', (ctx) => {
    const vendor = catalog.requireVendor(ctx.params.code);
    ctx.body = vendorToWire(vendor, catalog.vendorAvailability(vendor));
  });

  router.get('/getMe', async (ctx) => {
    const found = await findAccountAndKey(db, ctx.state.auth);
    // Only reachable if the account or key vanished between authentication and this read.
    if (!found) throw unauthorized('The API key is not recognised.');
    const { account, key } = found;
    ctx.body = {
      account: {
        id: account.id,
        name: account.name,
        created_at: toUnixSeconds(account.created_at),
        mcp_enabled: account.mcp_enabled,
      },
      // null for an operator acting for the account (no key is involved).
      key: key && { id: key.id, created_at: toUnixSeconds(key.created_at) },
      balance: account.balance,
    };
  });

  return router;
}

function v1Model(catalog: Catalog, model: CatalogModel) {
  return {
    id: model.code,
    object: 'model',
    owned_by: model.vendor,
    ...modelToWire(model, catalog.modelAvailability(model)),
  };
}
