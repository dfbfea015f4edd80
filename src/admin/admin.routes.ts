import Router from '@koa/router';
import { z } from 'zod';
import { accountToWire, keyToWire, type AccountsService } from '../accounts/accounts.service';
import { MAX_KEY_LIFETIME_SECONDS } from '../accounts/api-keys';
import { toListEnvelope } from '../http/lists';
import { toUnixSeconds } from '../time';
import type { Ledger } from '../billing/ledger';
import { transactionToWire } from '../billing/ledger';
import { requireAdminToken } from '../http/auth';
import { parseInput, queryInteger } from '../http/validation';

/** Text Postgres cannot store (U+0000) is refused by the body reader (http/json-limits.ts), as for every route. */
const storedName = z.string().trim().min(1).max(256);

export const createAccountSchema = z.strictObject({
  name: storedName,
  balance: z.number().int().min(0).max(1e12).optional(),
  mcp_enabled: z.boolean().optional(),
});
/** A limit: a positive whole number, or null for the configured default. */
const limit = (max: number) => z.number().int().positive().max(max).nullable().optional();
export const updateAccountSchema = z.strictObject({
  name: storedName.optional(),
  mcp_enabled: z.boolean().optional(),
  limits: z
    .strictObject({ requests_per_minute: limit(10_000_000), tokens_per_minute: limit(2_000_000_000), concurrent_jobs: limit(1_000_000) })
    .optional(),
});
export const listAccountsQuery = z.strictObject({
  name: z.string().trim().min(1).max(256).optional(),
  limit: queryInteger(1, 100).optional(),
  after: z.string().min(1).max(128).optional(),
});
export const creditSchema = z.strictObject({
  amount: z.number().int().positive().max(1e12),
  note: z.string().max(512).optional(),
});
export const createKeySchema = z.strictObject({
  name: storedName.optional(),
  expires_in: z.number().int().positive().max(MAX_KEY_LIFETIME_SECONDS).optional(),
});

/** The operators' "personal account area": accounts, credits and keys, behind the admin token. */
export function adminRoutes(deps: { accounts: AccountsService; ledger: Ledger; adminToken: string }): Router {
  const { accounts, ledger } = deps;
  const router = new Router({ prefix: '/admin' });
  router.use(requireAdminToken(deps.adminToken));

  router.post('/accounts', async (ctx) => {
    const body = parseInput(createAccountSchema, ctx.request.body ?? {}, 'admin');
    const account = await accounts.createAccount({ name: body.name, balance: body.balance, mcpEnabled: body.mcp_enabled });
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
    const limits = body.limits && { requestsPerMinute: body.limits.requests_per_minute, tokensPerMinute: body.limits.tokens_per_minute, concurrentJobs: body.limits.concurrent_jobs };
    ctx.body = accountToWire(await accounts.updateAccount(ctx.params.id, { name: body.name, mcpEnabled: body.mcp_enabled, limits }));
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

  router.post('/accounts/:id/keys', async (ctx) => {
    const body = parseInput(createKeySchema, ctx.request.body ?? {}, 'admin');
    const { row, key } = await accounts.createKey(ctx.params.id, { name: body.name, expiresInSeconds: body.expires_in });
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

  return router;
}
