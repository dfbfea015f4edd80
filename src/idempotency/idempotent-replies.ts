import type { Context } from 'koa';
import { sql } from 'kysely';
import type { Db } from '../db/database';
import { ApiError, invalidRequest } from '../errors';
import { readIdempotencyKey } from '../http/idempotency-key';
import { hashRequest } from '../http/request-hash';
import { newId } from '../ids';

/** api-decisions 17: a key is kept 24 hours. */
const KEPT = sql<Date>`now() - interval '24 hours'`;

/**
 * A call still `running` this long after it was claimed is taken to have died with its process (a crash): the
 * next request with the same key and body runs it again, under the same request id, so its debit is not repeated.
 * Longer than any vendor call may take (PROVIDER_TIMEOUT_MS is 10 minutes by default).
 */
const ABANDONED_AFTER = sql<Date>`now() - interval '11 minutes'`;

export interface IdempotentCall {
  accountId: string;
  /** The endpoint family: `chat`, `chat.v1`, `chat.openai`, `embeddings`, `embeddings.openai`, `speech`, `speech.openai`. */
  scope: string;
  key: string;
  /** The request body the key is bound to. */
  body: unknown;
}

/**
 * Idempotency-Key for the synchronous billable calls, with the contract of Responses (api-decisions 17): the same
 * key and body answer the stored reply and run nothing (`replayed`); another body is 400
 * `request.idempotency_key_reused`; a call still running under the key is 409 `request.conflict`. `produce` gets
 * the request id to key its debit by; a call that fails stores no reply, so it may be retried with its key, under
 * the same request id (a failure after its debit, storing the reply say, is then not billed twice).
 */
export function createIdempotentReplies(db: Db) {
  async function run<T>(
    call: IdempotentCall,
    produce: (requestId: string) => Promise<T>,
  ): Promise<{ reply: T; replayed: boolean }> {
    const requestHash = hashRequest(call.body);
    const claimed = await claim(call, requestHash);
    if (!claimed) return replayOf<T>(call, requestHash);
    let reply: T;
    try {
      reply = await produce(claimed.request_id);
    } catch (error) {
      await markFailed(call).catch(() => undefined);
      throw error;
    }
    await db
      .updateTable('idempotent_replies')
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
  async function claim(call: IdempotentCall, requestHash: string) {
    return db
      .insertInto('idempotent_replies')
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
            request_id: sql`case when idempotent_replies.created_at < ${KEPT} then excluded.request_id else idempotent_replies.request_id end`,
            status: 'running',
            reply: sql`null`,
            created_at: sql`now()`,
          })
          .where((w) =>
            w.or([
              w('idempotent_replies.created_at', '<', KEPT),
              w.and([
                w('idempotent_replies.status', '=', 'failed'),
                w('idempotent_replies.request_hash', '=', requestHash),
              ]),
              w.and([
                w('idempotent_replies.status', '=', 'running'),
                w('idempotent_replies.request_hash', '=', requestHash),
                w('idempotent_replies.created_at', '<', ABANDONED_AFTER),
              ]),
            ]),
          ),
      )
      .returning(['request_id'])
      .executeTakeFirst();
  }

  async function replayOf<T>(call: IdempotentCall, requestHash: string): Promise<{ reply: T; replayed: boolean }> {
    const stored = await db
      .selectFrom('idempotent_replies')
      .select(['request_hash', 'status', 'reply'])
      .where('account_id', '=', call.accountId)
      .where('scope', '=', call.scope)
      .where('key', '=', call.key)
      .executeTakeFirst();
    if (stored && stored.request_hash !== requestHash) {
      throw invalidRequest(
        'request',
        'This Idempotency-Key was already used with a different request body.',
        'idempotency_key_reused',
      );
    }
    if (stored?.status === 'completed') return { reply: stored.reply as T, replayed: true };
    // Running elsewhere.
    throw new ApiError(
      409,
      'request.conflict',
      'A request with this Idempotency-Key is still being processed; retry shortly.',
    );
  }

  async function markFailed(call: IdempotentCall) {
    await db
      .updateTable('idempotent_replies')
      .set({ status: 'failed' })
      .where('account_id', '=', call.accountId)
      .where('scope', '=', call.scope)
      .where('key', '=', call.key)
      .where('status', '=', 'running')
      .execute();
  }

  return { run };
}

export type IdempotentReplies = ReturnType<typeof createIdempotentReplies>;

/**
 * A synchronous billable route's reply: what `produce` makes, or with an Idempotency-Key the reply stored for it
 * (`Idempotent-Replayed: true` when it was), `produce` then getting the request id to key its debit by.
 */
export async function sendIdempotent(
  ctx: Context,
  replies: IdempotentReplies,
  scope: string,
  produce: (requestId?: string) => Promise<unknown>,
): Promise<void> {
  const key = readIdempotencyKey(ctx);
  if (!key) return void (ctx.body = await produce());
  const { reply, replayed } = await replies.run(
    { accountId: ctx.state.auth.accountId, scope, key, body: ctx.request.body },
    produce,
  );
  if (replayed) ctx.set('Idempotent-Replayed', 'true');
  ctx.body = reply;
}
