import Router from '@koa/router';
import { transactionToWire } from '../billing/ledger';
import { parseInput } from '../http/validation';
import type { Db } from '../db/database';
import { transactionsQuerySchema } from './organization.schema';
import { createOrganizationService } from './organization.service';

/** GET /v2/organization/balance and /v2/organization/transactions. */
export interface OrganizationRoutesDeps {
  db: Db;
}

export function organizationRoutes(deps: OrganizationRoutesDeps): Router {
  const service = createOrganizationService({ db: deps.db });
  const router = new Router({ prefix: '/v2/organization' });

  router.get('/balance', async (ctx) => {
    // `available`: the balance less the holds of operations in flight (DECISIONS.md 25).
    ctx.body = await service.getBalance(ctx.state.auth.accountId);
  });

  router.get('/transactions', async (ctx) => {
    const query = parseInput(transactionsQuerySchema, ctx.query, 'organization');
    const rows = await service.listTransactions(ctx.state.auth.accountId, { limit: query.limit, afterId: query.after_id });
    ctx.body = { transactions: rows.map(transactionToWire) };
  });

  return router;
}
