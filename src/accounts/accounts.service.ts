import { sql } from 'kysely';
import type { Db } from '../db/database';
import { inTransaction } from '../db/database';
import { forbidden, invalidRequest, notFound, unauthorized } from '../errors';
import type { Page } from '../db/keyset-page';
import { newId } from '../ids';
import type { Ledger } from '../billing/ledger';
import type { EventBus } from '../events/event-bus';
import { findAccount } from './accounts.repository';
import type { KeySigner } from './api-keys';
import type { AccountRow, ApiKeyRow } from './accounts.table';

export interface AuthContext {
  accountId: string;
  /**
   * The API key the request was made with; null when an operator signed in with the admin token and
   * X-Switchyard-Account (http/auth.ts): the request then uses no key of the account.
   */
  keyId: string | null;
  /** The account as read with the key (same query): what its routes and limits need, without another round trip. */
  account: { mcpEnabled: boolean; limits: OwnLimits };
}

/** An account's own limits (null: the configured default), as stored. */
export interface OwnLimits {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  concurrentJobs: number | null;
}

/** A key's last use is written at most this often per key and process: authentication stays a read. */
const LAST_USE_RESOLUTION_MS = 60_000;
/** Bus topics announcing a change to a key (id: key id) or to an account's limits or flags (id: account id). */
const KEY_CHANGED = 'auth.key';
const ACCOUNT_CHANGED = 'auth.account';
/** Entries the key cache holds at most per process; past that it starts over (a key is then read again). */
const MAX_CACHED_KEYS = 100_000;

/** A key row as authentication reads it (with its account's flags and limits). */
interface KeyRow {
  id: string;
  account_id: string;
  status: string;
  expires_at: Date | null;
  mcp_enabled: boolean;
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  concurrent_jobs: number | null;
  suspended_at: Date | null;
}

/**
 * `cacheMs`: how long this process reuses a key row it read (config AUTH_CACHE_MS; 0 reads it every time).
 * Every request otherwise costs a database round trip before anything else: with the cache, a busy key costs
 * one read per interval. Changes made through this service (disabling a key, changing an account) drop the
 * entry here at once and on every other process through the bus, so the interval only bounds how stale a row
 * can be when an announcement is lost (a replica's bus connection dropping for a moment). An expiry is checked
 * against the clock on every request, cached or not.
 */
export function createAccountsService(deps: {
  db: Db;
  ledger: Ledger;
  signer: KeySigner;
  bus: EventBus;
  cacheMs: number;
}) {
  const { db, ledger, signer, bus, cacheMs } = deps;
  /** Key id → when this process last wrote its `last_used_at`. Bounded: cleared whole when it grows past 100,000 keys. */
  const lastUseWritten = new Map<string, number>();
  /** Key id → its row and when it was read. */
  const keyCache = new Map<string, { row: KeyRow; readAt: number }>();
  /**
   * Bumped by every invalidation: a read that started before one may have seen the old row, so it is not
   * cached (it still answers its own request, which began before the change).
   */
  let cacheGeneration = 0;
  const forgetKey = (keyId: string) => {
    cacheGeneration++;
    keyCache.delete(keyId);
  };
  const forgetAccount = (accountId: string) => {
    cacheGeneration++;
    for (const [keyId, entry] of keyCache) if (entry.row.account_id === accountId) keyCache.delete(keyId);
  };
  bus.subscribeAll(KEY_CHANGED, (message) => forgetKey(message.id));
  bus.subscribeAll(ACCOUNT_CHANGED, (message) => forgetAccount(message.id));
  /** Drops the cached rows here and (through the bus, which also delivers locally) on every other process. */
  const announce = (topic: string, id: string) => bus.publish({ topic, id });

  function noteKeyUse(keyId: string): void {
    const now = Date.now();
    if (now - (lastUseWritten.get(keyId) ?? 0) < LAST_USE_RESOLUTION_MS) return;
    if (lastUseWritten.size >= 100_000) lastUseWritten.clear();
    lastUseWritten.set(keyId, now);
    // Not awaited: a lost write only makes "last used" older; the request does not wait for it.
    void db
      .updateTable('api_keys')
      .set({ last_used_at: new Date(now) })
      .where('id', '=', keyId)
      .execute()
      .catch(() => lastUseWritten.delete(keyId));
  }

  /**
   * Accounts newest first, `name` matching part of the name (case-insensitive), paged by an account id cursor.
   * Each with what it can spend (`available`: balance less the holds of operations in flight).
   */
  async function listAccounts(query: { name?: string; limit?: number; after?: string }): Promise<Page<AccountRow>> {
    const limit = query.limit ?? 20;
    let select = db.selectFrom('accounts').selectAll();
    if (query.name) select = select.where('name', 'ilike', `%${query.name.replace(/[\\%_]/g, (char) => `\\${char}`)}%`);
    if (query.after) {
      const cursor = await db
        .selectFrom('accounts')
        .select(['created_at', 'id'])
        .where('id', '=', query.after)
        .executeTakeFirst();
      if (!cursor) throw invalidRequest('admin', `after: no account with id ${query.after}.`);
      select = select.where((eb) =>
        eb.or([
          eb('created_at', '<', cursor.created_at),
          eb.and([eb('created_at', '=', cursor.created_at), eb('id', '<', cursor.id)]),
        ]),
      );
    }
    const rows = await select
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute();
    return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  /** An account's keys, newest first (never the key text: only its id, which cannot be used to authenticate). */
  async function listKeys(accountId: string): Promise<ApiKeyRow[]> {
    await getAccount(accountId);
    return db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  async function createAccount(input: { name: string; balance?: number; mcpEnabled?: boolean }): Promise<AccountRow> {
    return inTransaction(db, async (trx) => {
      const account = await trx
        .insertInto('accounts')
        .values({ id: newId('acct'), name: input.name, mcp_enabled: input.mcpEnabled ?? false })
        .returningAll()
        .executeTakeFirstOrThrow();
      if (input.balance && input.balance > 0) {
        await ledger.credit(
          { accountId: account.id, amount: input.balance, metadata: { source: 'admin', note: 'initial balance' } },
          trx,
        );
        return { ...account, balance: input.balance };
      }
      return account;
    });
  }

  async function getAccount(id: string): Promise<AccountRow> {
    const account = await findAccount(db, id);
    if (!account) throw notFound('admin', `No account with id ${id}.`);
    return account;
  }

  /** `limits`: the fields given are set (null: back to the default); the others stay. */
  async function updateAccount(
    id: string,
    patch: { name?: string; mcpEnabled?: boolean; limits?: Partial<OwnLimits>; suspended?: boolean },
  ): Promise<AccountRow> {
    const values: {
      name?: string;
      mcp_enabled?: boolean;
      requests_per_minute?: number | null;
      tokens_per_minute?: number | null;
      concurrent_jobs?: number | null;
      suspended_at?: Date | null;
    } = {};
    // Suspending keeps the first suspension's time; reactivating clears it.
    if (patch.suspended !== undefined)
      values.suspended_at = patch.suspended ? (sql<Date>`coalesce(suspended_at, now())` as unknown as Date) : null;
    if (patch.name !== undefined) values.name = patch.name;
    if (patch.mcpEnabled !== undefined) values.mcp_enabled = patch.mcpEnabled;
    if (patch.limits?.requestsPerMinute !== undefined) values.requests_per_minute = patch.limits.requestsPerMinute;
    if (patch.limits?.tokensPerMinute !== undefined) values.tokens_per_minute = patch.limits.tokensPerMinute;
    if (patch.limits?.concurrentJobs !== undefined) values.concurrent_jobs = patch.limits.concurrentJobs;
    if (Object.keys(values).length === 0) return getAccount(id);
    const account = await db.updateTable('accounts').set(values).where('id', '=', id).returningAll().executeTakeFirst();
    if (!account) throw notFound('admin', `No account with id ${id}.`);
    await announce(ACCOUNT_CHANGED, id);
    return account;
  }

  async function createKey(accountId: string, input: { name?: string; expiresInSeconds?: number }) {
    await getAccount(accountId);
    const expiresAt = input.expiresInSeconds ? new Date(Date.now() + input.expiresInSeconds * 1000) : undefined;
    const row = await db
      .insertInto('api_keys')
      .values({ id: newId('key'), account_id: accountId, name: input.name ?? null, expires_at: expiresAt ?? null })
      .returningAll()
      .executeTakeFirstOrThrow();
    const key = await signer.issue({ keyId: row.id, accountId, expiresAt });
    return { row, key };
  }

  async function disableKey(keyId: string): Promise<ApiKeyRow> {
    const row = await db
      .updateTable('api_keys')
      .set({ status: 'disabled', disabled_at: new Date() })
      .where('id', '=', keyId)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw notFound('admin', `No API key with id ${keyId}.`);
    await announce(KEY_CHANGED, keyId);
    return row;
  }

  /** Re-enables a disabled key (an operator's undo; an expired key stays expired). Idempotent. */
  async function enableKey(keyId: string): Promise<ApiKeyRow> {
    const row = await db
      .updateTable('api_keys')
      .set({ status: 'active', disabled_at: null })
      .where('id', '=', keyId)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw notFound('admin', `No API key with id ${keyId}.`);
    await announce(KEY_CHANGED, keyId);
    return row;
  }

  /**
   * Disables a key of the account. Idempotent: a disabled key stays as it is, keeping its first `disabled_at`.
   * undefined: no such key of this account (another account's key is not told apart from an unknown one).
   */
  async function disableAccountKey(accountId: string, keyId: string): Promise<ApiKeyRow | undefined> {
    const row = await db
      .updateTable('api_keys')
      .set({ status: 'disabled', disabled_at: sql<Date>`coalesce(disabled_at, now())` })
      .where('id', '=', keyId)
      .where('account_id', '=', accountId)
      .returningAll()
      .executeTakeFirst();
    if (row) await announce(KEY_CHANGED, keyId);
    return row;
  }

  /**
   * An operator acting for an account (the admin token was checked by the caller, http/auth.ts): the account as
   * authenticate reads it, with no key. Unknown account → 404, so the operator can tell a mistyped id from a
   * wrong token (401).
   */
  async function authenticateOperator(accountId: string): Promise<AuthContext> {
    const account = await findAccount(db, accountId);
    if (!account) throw notFound('auth', `No account with id ${accountId} (X-Switchyard-Account).`);
    const limits = {
      requestsPerMinute: account.requests_per_minute,
      tokensPerMinute: account.tokens_per_minute,
      concurrentJobs: account.concurrent_jobs,
    };
    return { accountId: account.id, keyId: null, account: { mcpEnabled: account.mcp_enabled, limits } };
  }

  /** Verifies the token, then asks the key row: unknown → 401, disabled → 403 (spec, Authentication 5). */
  async function authenticate(token: string): Promise<AuthContext> {
    const claims = await signer.verify(token);
    const row = await keyRow(claims.keyId);
    if (!row || row.account_id !== claims.accountId) throw unauthorized('The API key is not recognised.');
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw unauthorized('The API key has expired.');
    if (row.status !== 'active') throw forbidden('auth', 'The API key is disabled.');
    if (row.suspended_at)
      throw forbidden('auth', 'The account is suspended; its keys are refused until an operator reactivates it.');
    const limits = {
      requestsPerMinute: row.requests_per_minute,
      tokensPerMinute: row.tokens_per_minute,
      concurrentJobs: row.concurrent_jobs,
    };
    noteKeyUse(row.id);
    return { accountId: row.account_id, keyId: row.id, account: { mcpEnabled: row.mcp_enabled, limits } };
  }

  /** The key's row from the cache while it is fresh, else from the database (an unknown key is never cached). */
  async function keyRow(keyId: string): Promise<KeyRow | undefined> {
    const cached = keyCache.get(keyId);
    if (cached && Date.now() - cached.readAt < cacheMs) return cached.row;
    const generation = cacheGeneration;
    const readAt = Date.now();
    const row = await db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select([
        'api_keys.id',
        'api_keys.account_id',
        'api_keys.status',
        'api_keys.expires_at',
        'accounts.mcp_enabled',
        'accounts.requests_per_minute',
        'accounts.tokens_per_minute',
        'accounts.concurrent_jobs',
        'accounts.suspended_at',
      ])
      .where('api_keys.id', '=', keyId)
      .executeTakeFirst();
    if (row && cacheMs > 0 && generation === cacheGeneration) {
      if (keyCache.size >= MAX_CACHED_KEYS) keyCache.clear();
      keyCache.set(keyId, { row, readAt });
    }
    return row;
  }

  return {
    createAccount,
    getAccount,
    updateAccount,
    listAccounts,
    listKeys,
    createKey,
    disableKey,
    enableKey,
    disableAccountKey,
    authenticate,
    authenticateOperator,
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;
