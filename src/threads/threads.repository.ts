import { sql } from 'kysely';
import type { Db } from '../db/database';
import { runPageWithinBytes, type Page, type PageRequest } from '../db/keyset-page';
import { latestWithinBudget, type LatestRows } from '../db/latest-within-budget';
import { notFound } from '../errors';
import { newId } from '../ids';
import type { TextPart, ThreadMessageRole, ThreadMessageRow, ThreadRow } from './threads.table';

/**
 * Queries for threads and their messages. Every function takes the executor first so that a service (or the
 * Runs engine) can run it inside its own transaction. Ownership is part of the WHERE clause wherever an
 * account is given: another account's rows are simply not found.
 */

export type { ThreadMessageRow, ThreadRow } from './threads.table';
/** Row → wire mappers live in threads.wire.ts; re-exported here for the Runs engine, which reads rows from here. */
export { messageToWire, threadToWire } from './threads.wire';

/**
 * A message to store, in TypeScript terms. `id` lets a caller choose it (a Run's output message) so that a
 * retried append never duplicates; `runId` and `assistantId` mark a message a Run appended.
 */
export interface NewThreadMessage {
  role: ThreadMessageRole;
  content: TextPart[];
  metadata?: Record<string, string>;
  id?: string;
  runId?: string | null;
  assistantId?: number | null;
}

// ---- threads ----

export async function insertThread(
  executor: Db,
  input: { accountId: string; metadata: Record<string, string> },
): Promise<ThreadRow> {
  return executor
    .insertInto('threads')
    .values({ id: newId('thread'), account_id: input.accountId, metadata: JSON.stringify(input.metadata) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The thread if it exists and belongs to the account. */
export async function findThread(executor: Db, accountId: string, threadId: string): Promise<ThreadRow | undefined> {
  return executor
    .selectFrom('threads')
    .selectAll()
    .where('id', '=', threadId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

export async function updateThreadMetadata(
  executor: Db,
  accountId: string,
  threadId: string,
  metadata: Record<string, string>,
): Promise<ThreadRow | undefined> {
  return executor
    .updateTable('threads')
    .set({ metadata: JSON.stringify(metadata) })
    .where('id', '=', threadId)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirst();
}

/** A hard delete; messages go with it through the foreign key's ON DELETE CASCADE. */
export async function deleteThread(executor: Db, accountId: string, threadId: string): Promise<boolean> {
  const result = await executor
    .deleteFrom('threads')
    .where('id', '=', threadId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

// ---- messages ----

/**
 * Appends messages in the given order (their `seq` follows the array) and returns them, as stored, in that order.
 * A message whose explicit `id` is already stored in this thread is kept as it is (insert … on conflict (id) do
 * nothing) and returned, so a retried append never duplicates. Throws 404 `thread.not_found` when the thread is
 * not the account's.
 * Call it inside a transaction: it locks the thread row (FOR NO KEY UPDATE) until commit, so appends to one
 * thread are serialised. Each append's messages then get contiguous `seq` values, and no append can commit a
 * smaller `seq` after a reader has paged past it. A concurrent delete of the thread waits as well.
 */
export async function insertMessages(
  executor: Db,
  input: { threadId: string; accountId: string; messages: NewThreadMessage[] },
): Promise<ThreadMessageRow[]> {
  if (input.messages.length === 0) return [];
  const thread = await executor
    .selectFrom('threads')
    .select('id')
    .where('id', '=', input.threadId)
    .where('account_id', '=', input.accountId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (!thread) throw notFound('thread', `No thread with id ${input.threadId}.`);

  const values = input.messages.map((message) => ({
    id: message.id ?? newId('msg'),
    thread_id: input.threadId,
    account_id: input.accountId,
    role: message.role,
    content: JSON.stringify(message.content),
    metadata: JSON.stringify(message.metadata ?? {}),
    assistant_id: message.assistantId ?? null,
    run_id: message.runId ?? null,
  }));
  await executor
    .insertInto('thread_messages')
    .values(values)
    .onConflict((conflict) => conflict.column('id').doNothing())
    .execute();
  const ids = [...new Set(values.map((value) => value.id))];
  const rows = await executor
    .selectFrom('thread_messages')
    .selectAll()
    .where('thread_id', '=', input.threadId)
    .where('id', 'in', ids)
    .orderBy('seq', 'asc')
    .execute();
  if (rows.length !== ids.length) {
    // Only possible when a caller-chosen id already belongs to another thread.
    throw new Error(`insertMessages: ${ids.length - rows.length} message id(s) already exist in another thread`);
  }
  return rows;
}

export async function findMessage(
  executor: Db,
  accountId: string,
  threadId: string,
  messageId: string,
): Promise<ThreadMessageRow | undefined> {
  return executor
    .selectFrom('thread_messages')
    .selectAll()
    .where('id', '=', messageId)
    .where('thread_id', '=', threadId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** `seq` of a message of this thread (a list cursor), or undefined. */
export async function findMessageSeq(executor: Db, threadId: string, messageId: string): Promise<number | undefined> {
  const row = await executor
    .selectFrom('thread_messages')
    .select('seq')
    .where('id', '=', messageId)
    .where('thread_id', '=', threadId)
    .executeTakeFirst();
  return row?.seq;
}

export async function updateMessageMetadata(
  executor: Db,
  accountId: string,
  threadId: string,
  messageId: string,
  metadata: Record<string, string>,
): Promise<ThreadMessageRow | undefined> {
  return executor
    .updateTable('thread_messages')
    .set({ metadata: JSON.stringify(metadata) })
    .where('id', '=', messageId)
    .where('thread_id', '=', threadId)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes the listed messages of the thread; returns the ids that were deleted (ids not of the thread are not). */
export async function deleteMessages(
  executor: Db,
  input: { accountId: string; threadId: string; messageIds: string[] },
): Promise<string[]> {
  if (input.messageIds.length === 0) return [];
  const rows = await executor
    .deleteFrom('thread_messages')
    .where('id', 'in', input.messageIds)
    .where('thread_id', '=', input.threadId)
    .where('account_id', '=', input.accountId)
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}

/** A page of a thread's messages; it stops early, with has_more, at MAX_PAGE_BYTES (at least one comes back). */
export async function listMessages(executor: Db, threadId: string, page: PageRequest): Promise<Page<ThreadMessageRow>> {
  const messages = executor.selectFrom('thread_messages').where('thread_id', '=', threadId);
  return runPageWithinBytes(messages.selectAll(), messages.select(['seq', 'stored_bytes as bytes']), page);
}

/** The history a Run sends to a model: the latest messages that fit a token budget (see listLatestMessagesWithin). */
export type LatestMessages = LatestRows<ThreadMessageRow>;

/**
 * The latest messages of a thread (at most `limit`), oldest first, as many as fit `tokenBudget` by the estimate
 * of MESSAGE_TOKENS; `complete` is false when an older message within `limit` did not fit, and `tokensSeen`
 * counts the messages examined, the first that did not fit included. Sizes are read first, newest first and in
 * growing pages, and only the messages that fit are loaded (src/db/latest-within-budget.ts), as for
 * conversations: a thread may hold gigabytes, and a prompt never needs more than a context window of it.
 */
export async function listLatestMessagesWithin(
  executor: Db,
  threadId: string,
  options: { limit?: number; tokenBudget: number },
): Promise<LatestMessages> {
  const messages = executor.selectFrom('thread_messages').where('thread_id', '=', threadId);
  return latestWithinBudget(messages.selectAll(), messages.select(['seq', MESSAGE_TOKENS.as('tokens')]), options);
}

/**
 * ceil(characters / 4) + 4 per message over the text of its parts (joined), as estimateTokens/itemTokens in
 * src/responses/prompt.ts. Characters are counted as Postgres does (an astral character is one), so the estimate
 * never exceeds the prompt builder's estimate of the same message.
 */
const MESSAGE_TOKENS = sql<number>`ceil((select coalesce(sum(length(part ->> 'text')), 0) from jsonb_array_elements(content) as part) / 4.0) + 4`;
