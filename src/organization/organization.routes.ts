import Router from '@koa/router';
import type { AccountsService } from '../accounts/accounts.service';
import { transactionToWire } from '../billing/ledger.wire';
import { toListEnvelope } from '../http/lists';
import { parseInput } from '../http/validation';
import type { Db } from '../db/database';
import {
  createKeySchema,
  disableKeySchema,
  responsesQuerySchema,
  runsQuerySchema,
  transactionsQuerySchema,
  usageQuerySchema,
} from './organization.schema';
import { createOrganizationService } from './organization.service';
import { accountKeyToWire, responseSummaryToWire, runSummaryToWire, usageToWire } from './organization.wire';

/**
 * /v2/organization: the account's balance, transactions and usage, its keys, and its recent Responses and Runs
 * (what the account's console shows). Every route acts on the authenticated account only.
 */
export interface OrganizationRoutesDeps {
  db: Db;
  accounts: AccountsService;
}

export function organizationRoutes(deps: OrganizationRoutesDeps): Router {
  const service = createOrganizationService({ db: deps.db, accounts: deps.accounts });
  const router = new Router({ prefix: '/v2/organization' });

  router.get('/balance', async (ctx) => {
    // `available`: the balance less the holds of operations in flight (api-decisions 25).
    ctx.body = await service.getBalance(ctx.state.auth.accountId);
  });

  router.get('/transactions', async (ctx) => {
    const query = parseInput(transactionsQuerySchema, ctx.query, 'organization');
    const rows = await service.listTransactions(ctx.state.auth.accountId, {
      limit: query.limit,
      afterId: query.after_id,
      service: query.service,
      model: query.model,
    });
    ctx.body = { transactions: rows.map(transactionToWire) };
  });

  router.get('/usage', async (ctx) => {
    const query = parseInput(usageQuerySchema, ctx.query, 'organization');
    ctx.body = usageToWire(
      await service.getUsage(ctx.state.auth.accountId, { from: query.from, to: query.to, groupBy: query.group_by }),
    );
  });

  router.get('/keys', async (ctx) => {
    const { accountId, keyId } = ctx.state.auth;
    ctx.body = toListEnvelope({ rows: await service.listKeys(accountId), hasMore: false }, (row) =>
      accountKeyToWire(row, keyId),
    );
  });

  router.post('/keys', async (ctx) => {
    const body = parseInput(createKeySchema, ctx.request.body ?? {}, 'organization');
    const { row, key } = await service.createKey(ctx.state.auth.accountId, {
      name: body.name,
      expiresInSeconds: body.expires_in_seconds,
    });
    ctx.status = 201;
    // The key text is in this reply only: it is not stored (a key is a signed token; api-keys.ts).
    ctx.body = { ...accountKeyToWire(row, ctx.state.auth.keyId), key };
  });

  router.post('/keys/:id/disable', async (ctx) => {
    const body = parseInput(disableKeySchema, ctx.request.body ?? {}, 'organization');
    const row = await service.disableKey(ctx.state.auth, ctx.params.id, { confirmSelf: body.confirm_self });
    ctx.body = accountKeyToWire(row, ctx.state.auth.keyId);
  });

  router.get('/responses', async (ctx) => {
    const query = parseInput(responsesQuerySchema, ctx.query, 'organization');
    const page = await service.listResponses(ctx.state.auth.accountId, query);
    ctx.body = toListEnvelope(page, ({ row, webhook }) => responseSummaryToWire(row, webhook));
  });

  router.get('/responses/:id', async (ctx) => {
    const { row, webhook } = await service.getResponse(ctx.state.auth.accountId, ctx.params.id);
    ctx.body = responseSummaryToWire(row, webhook);
  });

  router.get('/runs', async (ctx) => {
    const query = parseInput(runsQuerySchema, ctx.query, 'organization');
    ctx.body = toListEnvelope(await service.listRuns(ctx.state.auth.accountId, query), runSummaryToWire);
  });

  return router;
}
