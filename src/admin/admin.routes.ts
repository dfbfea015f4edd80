import Router from '@koa/router';
import type { AccountsService } from '../accounts/accounts.service';
import { accountToWire, keyToWire } from '../accounts/accounts.wire';
import { toListEnvelope } from '../http/lists';
import { toUnixSeconds } from '../time';
import type { Ledger } from '../billing/ledger';
import { transactionToWire } from '../billing/ledger.wire';
import { requireAdminToken } from '../http/auth';
import { parseInput } from '../http/validation';
import type { Db } from '../db/database';
import type { RouteAdmin } from '../catalog/route-admin';
import { routeSchema } from '../catalog/catalog.schema';
import { adminRouteToWire } from '../catalog/catalog.wire';
import { invalidRequest } from '../errors';
import { usageQuerySchema } from '../organization/organization.schema';
import { createOrganizationService } from '../organization/organization.service';
import { usageToWire } from '../organization/organization.wire';
import {
  adjustmentSchema,
  createAccountSchema,
  createKeySchema,
  creditSchema,
  listAccountsQuery,
  updateAccountSchema,
} from './admin.schema';

/** The operators' "personal account area": accounts, credits and keys, and the catalog's routes, behind the admin token. */
export function adminRoutes(deps: {
  accounts: AccountsService;
  ledger: Ledger;
  adminToken: string;
  db: Db;
  routes: RouteAdmin;
}): Router {
  const { accounts, ledger } = deps;
  const organization = createOrganizationService({ db: deps.db, accounts });
  const router = new Router({ prefix: '/admin' });
  router.use(requireAdminToken(deps.adminToken));

  router.post('/accounts', async (ctx) => {
    const body = parseInput(createAccountSchema, ctx.request.body ?? {}, 'admin');
    const account = await accounts.createAccount({
      name: body.name,
      balance: body.balance,
      mcpEnabled: body.mcp_enabled,
    });
    ctx.status = 201;
    ctx.body = accountToWire(account);
  });

  router.get('/accounts', async (ctx) => {
    const query = parseInput(listAccountsQuery, ctx.query, 'admin');
    ctx.body = toListEnvelope(await accounts.listAccounts(query), accountToWire);
  });

  /** One account with its keys (an operator's `account show`). */
  router.get('/accounts/:id', async (ctx) => {
    const [account, keys] = await Promise.all([accounts.getAccount(ctx.params.id), accounts.listKeys(ctx.params.id)]);
    ctx.body = { ...accountToWire(account), keys: keys.map(keyToWire) };
  });

  router.get('/accounts/:id/keys', async (ctx) => {
    ctx.body = toListEnvelope({ rows: await accounts.listKeys(ctx.params.id), hasMore: false }, keyToWire);
  });

  router.patch('/accounts/:id', async (ctx) => {
    const body = parseInput(updateAccountSchema, ctx.request.body ?? {}, 'admin');
    const limits = body.limits && {
      requestsPerMinute: body.limits.requests_per_minute,
      tokensPerMinute: body.limits.tokens_per_minute,
      concurrentJobs: body.limits.concurrent_jobs,
    };
    ctx.body = accountToWire(
      await accounts.updateAccount(ctx.params.id, { name: body.name, mcpEnabled: body.mcp_enabled, limits }),
    );
  });

  /** Suspend: the account's keys answer 403 at once on every replica (announced as any account change); reactivate undoes it. */
  router.post('/accounts/:id/suspend', async (ctx) => {
    ctx.body = accountToWire(await accounts.updateAccount(ctx.params.id, { suspended: true }));
  });
  router.post('/accounts/:id/reactivate', async (ctx) => {
    ctx.body = accountToWire(await accounts.updateAccount(ctx.params.id, { suspended: false }));
  });

  router.post('/accounts/:id/credits', async (ctx) => {
    const body = parseInput(creditSchema, ctx.request.body ?? {}, 'admin');
    await accounts.getAccount(ctx.params.id);
    const transaction = await ledger.credit({
      accountId: ctx.params.id,
      amount: body.amount,
      metadata: { source: 'admin', ...(body.note ? { note: body.note } : {}) },
    });
    ctx.status = 201;
    ctx.body = transactionToWire(transaction);
  });

  /**
   * A debit or a refund by an operator, with its reason; idempotent by its key (operation key `admin:<key>`): the
   * same key again answers the transaction written the first time, as the first reply did (201, with the header
   * `Idempotent-Replayed: true`), whatever the body. A debit never takes the
   * account below what it has available (balance less holds): more is a 400 and nothing is written.
   */
  router.post('/accounts/:id/adjustments', async (ctx) => {
    const body = parseInput(adjustmentSchema, ctx.request.body ?? {}, 'admin');
    const accountId = ctx.params.id;
    await accounts.getAccount(accountId);
    const operationKey = `admin:${body.idempotency_key}`;
    const metadata = { source: 'admin', reason: body.reason, idempotency_key: body.idempotency_key };
    const existing = await ledger.findOperation(accountId, operationKey);
    if (existing) {
      ctx.status = 201;
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = transactionToWire(existing);
      return;
    }
    let transaction;
    if (body.type === 'refund') {
      // A concurrent repeat of the same key loses on the operation's unique key: it answers the winner's row.
      transaction = await ledger
        .credit({ accountId, amount: body.amount, metadata, operationKey })
        .catch(async (error: unknown) => {
          const written = await ledger.findOperation(accountId, operationKey);
          if (!written) throw error;
          return written;
        });
    } else {
      const { available } = await organization.getBalance(accountId);
      if (body.amount > available) {
        throw invalidRequest(
          'admin',
          `The account has ${available} kopecks available (its balance less what operations in flight hold); a debit of ${body.amount} would exceed it.`,
        );
      }
      transaction = await ledger.debit({ accountId, cost: String(body.amount), operationKey, metadata });
      if (!transaction || Number(transaction.amount) < body.amount)
        throw invalidRequest('admin', 'The available balance changed meanwhile; the debit was not taken whole.');
    }
    ctx.status = 201;
    ctx.body = transactionToWire(transaction);
  });

  /** The account's debits summed by day, model or service (`group_by`, default day), over `from`..`to` (the usage API's). */
  router.get('/accounts/:id/usage', async (ctx) => {
    const query = parseInput(usageQuerySchema, ctx.query, 'admin');
    await accounts.getAccount(ctx.params.id);
    ctx.body = usageToWire(
      await organization.getUsage(ctx.params.id, { from: query.from, to: query.to, groupBy: query.group_by }),
    );
  });

  router.post('/accounts/:id/keys', async (ctx) => {
    const body = parseInput(createKeySchema, ctx.request.body ?? {}, 'admin');
    const { row, key } = await accounts.createKey(ctx.params.id, {
      name: body.name,
      expiresInSeconds: body.expires_in,
    });
    ctx.status = 201;
    ctx.body = {
      id: row.id,
      key,
      created_at: toUnixSeconds(row.created_at),
      expires_at: row.expires_at ? toUnixSeconds(row.expires_at) : null,
    };
  });

  router.post('/keys/:id/disable', async (ctx) => {
    const row = await accounts.disableKey(ctx.params.id);
    ctx.body = { id: row.id, status: row.status };
  });

  router.post('/keys/:id/enable', async (ctx) => {
    const row = await accounts.enableKey(ctx.params.id);
    ctx.body = { id: row.id, status: row.status };
  });

  // Routes of the catalog changed at run time (issue 36, api-decisions 34): the body is a route as the catalog file
  // writes it, validated as the loader validates the file.
  router.get('/routes', async (ctx) => {
    ctx.body = { object: 'list', data: (await deps.routes.list()).map(adminRouteToWire) };
  });
  router.get('/routes/:code', async (ctx) => {
    ctx.body = adminRouteToWire(await deps.routes.get(ctx.params.code));
  });
  router.post('/routes', async (ctx) => {
    const route = await deps.routes.create(parseInput(routeSchema, ctx.request.body ?? {}, 'admin'));
    ctx.status = 201;
    ctx.body = adminRouteToWire(route);
  });
  router.put('/routes/:code', async (ctx) => {
    const body: unknown = ctx.request.body ?? {};
    // The code is the path's; a body may repeat it.
    if (typeof body !== 'object' || Array.isArray(body)) parseInput(routeSchema, body, 'admin');
    const code = (body as { code?: unknown }).code;
    if (code !== undefined && code !== ctx.params.code)
      throw invalidRequest('admin', `The body's code "${String(code)}" is not the path's "${ctx.params.code}".`);
    const input = parseInput(routeSchema, { ...(body as object), code: ctx.params.code }, 'admin');
    ctx.body = adminRouteToWire(await deps.routes.replace(input));
  });
  router.delete('/routes/:code', async (ctx) => {
    await deps.routes.remove(ctx.params.code);
    ctx.body = { object: 'route.deleted', code: ctx.params.code, deleted: true };
  });

  return router;
}
