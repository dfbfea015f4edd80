import type { Context, Middleware } from 'koa';
import { sql } from 'kysely';
import type { Db } from '../db/database';
import { ApiError, invalidRequest } from '../errors';
import { readIdempotencyKey } from '../http/idempotency-key';
import { hashRequest } from '../http/request-hash';
import { newId } from '../ids';

/**
 * Idempotency-Key, one contract for every endpoint that takes it (docs/api-decisions.md 17):
 * - the same key with the same body gets the first request's outcome and runs nothing again
 *   (`Idempotent-Replayed: true`): a synchronous call's stored reply, or what a creation created, as it stands now;
 * - the same key with another body is 400 `request.idempotency_key_reused`;
 * - a request still running under the key is 409 `request.conflict`;
 * - a call that failed, or that a crash abandoned, stores nothing and runs again under its request id, so its debit
 *   is not repeated;
 * - keys live 24 hours, per account and endpoint family (the scope a route declares with `idempotent`).
 *
 * Two shapes of request share the table (`idempotency_keys`): a call whose reply is stored (`run`: chat completions,
 * embeddings, speech, synchronous transcription) and a creation whose outcome is a durable resource written in the
 * creation's own transaction (`claimCreation`/`findCreation`: Responses, Runs, asynchronous transcriptions), so the
 * key and the resource commit together or not at all.
 */

/** docs/api-decisions.md 17: a key is kept 24 hours. */
const KEPT = sql<Date>`now() - interval '24 hours'`;

/**
 * A call still `running` this long after it was claimed is taken to have died with its process (a crash): the
 * next request with the same key and body runs it again, under the same request id, so its debit is not repeated.
 * Longer than any vendor call may take (PROVIDER_TIMEOUT_MS is 10 minutes by default).
 */
const ABANDONED_AFTER = sql<Date>`now() - interval '11 minutes'`;

/** A route's Idempotency-Key, as its `idempotent` declaration read it. */
export interface IdempotencyKeyUse {
  /** The endpoint family the route declared: one key may be used on each. */
  scope: string;
  key: string;
}

/** One request under a key: whose, where, and the hash of the body the key is bound to. */
export interface IdempotentCall extends IdempotencyKeyUse {
  accountId: string;
  requestHash: string;
}

declare module 'koa' {
  interface DefaultState {
    /** The request's Idempotency-Key, on a route that declares `idempotent`, when the request sent one. */
    idempotency?: IdempotencyKeyUse;
  }
}

const DECLARED_SCOPE = 'idempotencyScope';

/**
 * Declared on a route that takes an Idempotency-Key, before its handler: the header is validated (400 when
 * malformed) and the key, with the route's scope, is put on `ctx.state.idempotency` for the handler
 * (`idempotentCall`). The route says so itself, on every surface it is mounted on; a route walk reads the
 * declaration (`declaredIdempotency`).
 */
export const idempotent = (scope: string): Middleware => {
  const declared: Middleware = (ctx, next) => {
    const key = readIdempotencyKey(ctx);
    if (key) ctx.state.idempotency = { scope, key };
    return next();
  };
  return Object.assign(declared, { [DECLARED_SCOPE]: scope });
};

/** The scope a route's middleware declares (route walks read it), or undefined. */
export const declaredIdempotency = (middleware: unknown): string | undefined =>
  (middleware as { [DECLARED_SCOPE]?: string })[DECLARED_SCOPE];

/** The request's key bound to `body` (the parsed request, or what identifies an upload), or undefined without a key. */
export function idempotentCall(ctx: Context, body: unknown): IdempotentCall | undefined {
  const use = ctx.state.idempotency;
  return use && { ...use, accountId: ctx.state.auth.accountId, requestHash: hashRequest(body) };
}

const reusedKey = () =>
  invalidRequest(
    'request',
    'This Idempotency-Key was already used with a different request body.',
    'idempotency_key_reused',
  );

export const stillRunning = () =>
  new ApiError(409, 'request.conflict', 'A request with this Idempotency-Key is still being processed; retry shortly.');

export function createIdempotency(db: Db) {
  const ofCall = (call: IdempotentCall) =>
    db
      .selectFrom('idempotency_keys')
      .where('account_id', '=', call.accountId)
      .where('scope', '=', call.scope)
      .where('key', '=', call.key);

  /**
   * A call whose reply is stored: `produce` runs once per key and body (it gets the request id to key its debit by)
   * and its reply is kept for the repeats; a call that fails stores no reply, so it may be retried with its key,
   * under the same request id (a failure after its debit, storing the reply say, is then not billed twice).
   */
  async function run<T>(
    call: IdempotentCall,
    produce: (requestId: string) => Promise<T>,
  ): Promise<{ reply: T; replayed: boolean }> {
    const claimed = await claimCall(call);
    if (!claimed) return replayOf<T>(call);
    let reply: T;
    try {
      reply = await produce(claimed.request_id);
    } catch (error) {
      await markFailed(call).catch(() => undefined);
      throw error;
    }
    await db
      .updateTable('idempotency_keys')
      .set({ status: 'completed', reply: JSON.stringify(reply) })
      .where('account_id', '=', call.accountId)
      .where('scope', '=', call.scope)
      .where('key', '=', call.key)
      .execute();
    return { reply, replayed: false };
  }

  /**
   * The key for this call: new, expired (older than 24 hours), or left by a failed or crashed call with the same
   * body (whose request id it keeps). Undefined when another call holds it or completed under it.
   */
  async function claimCall(call: IdempotentCall) {
    const { requestHash } = call;
    return db
      .insertInto('idempotency_keys')
      .values({
        account_id: call.accountId,
        scope: call.scope,
        key: call.key,
        request_hash: requestHash,
        request_id: newId('req'),
        status: 'running',
      })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'scope', 'key'])
          .doUpdateSet({
            request_hash: requestHash,
            request_id: sql`case when idempotency_keys.created_at < ${KEPT} then excluded.request_id else idempotency_keys.request_id end`,
            status: 'running',
            reply: sql`null`,
            created_at: sql`now()`,
          })
          .where((w) =>
            w.or([
              w('idempotency_keys.created_at', '<', KEPT),
              w.and([
                w('idempotency_keys.status', '=', 'failed'),
                w('idempotency_keys.request_hash', '=', requestHash),
              ]),
              w.and([
                w('idempotency_keys.status', '=', 'running'),
                w('idempotency_keys.request_hash', '=', requestHash),
                w('idempotency_keys.created_at', '<', ABANDONED_AFTER),
              ]),
            ]),
          ),
      )
      .returning(['request_id'])
      .executeTakeFirst();
  }

  async function replayOf<T>(call: IdempotentCall): Promise<{ reply: T; replayed: boolean }> {
    const stored = await ofCall(call).select(['request_hash', 'status', 'reply']).executeTakeFirst();
    if (stored && stored.request_hash !== call.requestHash) throw reusedKey();
    if (stored?.status === 'completed') return { reply: stored.reply as T, replayed: true };
    throw stillRunning(); // running elsewhere
  }

  async function markFailed(call: IdempotentCall) {
    await db
      .updateTable('idempotency_keys')
      .set({ status: 'failed' })
      .where('account_id', '=', call.accountId)
      .where('scope', '=', call.scope)
      .where('key', '=', call.key)
      .where('status', '=', 'running')
      .execute();
  }

  /**
   * The id a live key's creation created, or undefined when the key is free (new or expired); 400 when the key was
   * used with another body. Read before a creation (a repeat creates nothing), and after a lost `claimCreation`.
   */
  async function findCreation(call: IdempotentCall): Promise<string | undefined> {
    const stored = await ofCall(call)
      .select(['request_hash', 'resource_id'])
      .where('created_at', '>=', KEPT)
      .executeTakeFirst();
    if (!stored) return undefined;
    if (stored.request_hash !== call.requestHash) throw reusedKey();
    return stored.resource_id ?? undefined;
  }

  /**
   * Claims the key for the creation of `resourceId`, in the creation's transaction `trx` (so the key and the resource
   * commit together, or neither does). False when a live key holds it: a concurrent request with the key won (the
   * insert waits for its transaction), so the caller rolls back and answers `findCreation`'s resource.
   */
  async function claimCreation(trx: Db, call: IdempotentCall, resourceId: string): Promise<boolean> {
    const claimed = await trx
      .insertInto('idempotency_keys')
      .values({
        account_id: call.accountId,
        scope: call.scope,
        key: call.key,
        request_hash: call.requestHash,
        request_id: resourceId,
        status: 'completed',
        resource_id: resourceId,
      })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'scope', 'key'])
          .doUpdateSet({
            request_hash: call.requestHash,
            request_id: resourceId,
            status: 'completed',
            reply: sql`null`,
            resource_id: resourceId,
            created_at: sql`now()`,
          })
          .where('idempotency_keys.created_at', '<', KEPT),
      )
      .returning('resource_id')
      .executeTakeFirst();
    return claimed !== undefined;
  }

  /** Frees a key whose creation was undone after its transaction (an asynchronous upload that could not be stored). */
  async function forgetCreation(call: IdempotentCall, resourceId: string): Promise<void> {
    await db
      .deleteFrom('idempotency_keys')
      .where('account_id', '=', call.accountId)
      .where('scope', '=', call.scope)
      .where('key', '=', call.key)
      .where('resource_id', '=', resourceId)
      .execute();
  }

  return { run, findCreation, claimCreation, forgetCreation };
}

export type Idempotency = ReturnType<typeof createIdempotency>;

/**
 * A synchronous billable route's reply: what `produce` makes, or with an Idempotency-Key the reply stored for it
 * (`Idempotent-Replayed: true` when it was), `produce` then getting the request id to key its debit by.
 */
export async function sendIdempotent(
  ctx: Context,
  idempotency: Idempotency,
  produce: (requestId?: string) => Promise<unknown>,
): Promise<void> {
  const call = idempotentCall(ctx, ctx.request.body);
  if (!call) return void (ctx.body = await produce());
  const { reply, replayed } = await idempotency.run(call, produce);
  if (replayed) ctx.set('Idempotent-Replayed', 'true');
  ctx.body = reply;
}
