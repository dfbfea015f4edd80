import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../db/database';
import type { Database } from '../db/schema';
import { notFound } from '../errors';
import { newId } from '../ids';
import type { ContentPart, ConversationItemRow, ConversationRow } from './conversations.table';
import { toUnixSeconds } from '../time';

/**
 * Queries for conversations and their items. Every function takes the executor first so that a service
 * (or the Responses engine) can run it inside its own transaction. Ownership is always part of the
 * WHERE clause: another account's rows are simply not found.
 */

export type MessageRole = NonNullable<ConversationItemRow['role']>;
export type ItemStatus = ConversationItemRow['status'];

/** An item to store, in TypeScript terms. `id` lets the engine reuse its output item ids and retry safely. */
export type NewConversationItem =
  | { type: 'message'; role: MessageRole; content: string | ContentPart[]; status?: ItemStatus; id?: string }
  | { type: 'function_call'; callId: string; name: string; arguments: string; status?: ItemStatus; id?: string }
  | { type: 'function_call_output'; callId: string; output: string; status?: ItemStatus; id?: string };

export interface PageRequest {
  limit: number;
  order: 'asc' | 'desc';
  /** `seq` of the cursor row: the page starts just past it in `order`. */
  afterSeq?: number;
  /** `seq` of the cursor row: the page ends just before it in `order`. */
  beforeSeq?: number;
}

export interface Page<Row> {
  rows: Row[];
  hasMore: boolean;
}

// ---- conversations ----

export async function insertConversation(
  executor: Db,
  input: { accountId: string; metadata: Record<string, string> },
): Promise<ConversationRow> {
  return executor
    .insertInto('conversations')
    .values({ id: newId('conv'), account_id: input.accountId, metadata: JSON.stringify(input.metadata) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findConversation(executor: Db, accountId: string, id: string): Promise<ConversationRow | undefined> {
  return executor.selectFrom('conversations').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

export async function updateConversationMetadata(
  executor: Db,
  accountId: string,
  id: string,
  metadata: Record<string, string>,
): Promise<ConversationRow | undefined> {
  return executor
    .updateTable('conversations')
    .set({ metadata: JSON.stringify(metadata) })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirst();
}

/** Items go with it through the foreign key's ON DELETE CASCADE. */
export async function deleteConversation(executor: Db, accountId: string, id: string): Promise<boolean> {
  const result = await executor.deleteFrom('conversations').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function findConversationSeq(executor: Db, accountId: string, id: string): Promise<number | undefined> {
  const row = await executor.selectFrom('conversations').select('seq').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return row?.seq;
}

export async function listConversations(executor: Db, accountId: string, page: PageRequest): Promise<Page<ConversationRow>> {
  const query = executor.selectFrom('conversations').selectAll().where('account_id', '=', accountId);
  return runPage(query, page);
}

// ---- items ----

/**
 * Appends items in the given order (their `seq` follows the array). Used by the API and by the Responses
 * engine, which passes `responseId` (DECISIONS.md 21). Items that carry an `id` already stored in this
 * conversation are kept as they are, so a retried activity never appends twice.
 * Call it inside a transaction: it locks the conversation row (FOR NO KEY UPDATE) until commit, so appends to
 * one conversation are serialised. Each append's items then get contiguous `seq` values, and no append can
 * commit a smaller `seq` after a reader has paged past it. A concurrent delete waits as well.
 */
export async function appendItems(
  executor: Db,
  input: { conversationId: string; accountId: string; items: NewConversationItem[]; responseId?: string | null },
): Promise<ConversationItemRow[]> {
  if (input.items.length === 0) return [];
  const conversation = await executor
    .selectFrom('conversations')
    .select('id')
    .where('id', '=', input.conversationId)
    .where('account_id', '=', input.accountId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (!conversation) throw notFound('conversation', `No conversation with id ${input.conversationId}.`);

  const values = input.items.map((item) => itemToValues(item, input.conversationId, input.accountId, input.responseId ?? null));
  await executor.insertInto('conversation_items').values(values).onConflict((conflict) => conflict.column('id').doNothing()).execute();
  const rows = await executor
    .selectFrom('conversation_items')
    .selectAll()
    .where('conversation_id', '=', input.conversationId)
    .where('id', 'in', values.map((value) => value.id))
    .orderBy('seq', 'asc')
    .execute();
  if (rows.length !== values.length) {
    // Only possible when a caller-chosen id already belongs to another conversation.
    throw new Error(`appendItems: ${values.length - rows.length} item id(s) already exist in another conversation`);
  }
  return rows;
}

/** The history the engine sends to a model: the latest items that fit a token budget (see listLatestItemsWithin). */
export interface LatestItems {
  /** Oldest first. */
  rows: ConversationItemRow[];
  /** False when an older item (within `limit`) did not fit and was left out. */
  complete: boolean;
  /** Estimated tokens of the items examined, the first one that did not fit included. */
  tokensSeen: number;
}

/**
 * Item sizes are read newest first in pages that start small and grow: working out a size reads the whole
 * item (on PGlite, in this process), and a prompt's budget is often spent by the first few.
 */
const FIRST_SIZE_PAGE = 4;
const MAX_SIZE_PAGE = 256;

/**
 * The latest items of a conversation (at most `limit`), oldest first, as many as fit `tokenBudget` by the
 * estimate of ITEM_TOKENS. Their sizes are read first, newest first and in pages, and only the items that fit
 * are loaded: a conversation may hold gigabytes, and a prompt never needs more than a context window of it.
 * The estimate counts characters as Postgres does (an astral character is one), so it never exceeds the
 * prompt builder's estimate of the same item.
 */
export async function listLatestItemsWithin(executor: Db, conversationId: string, options: { limit?: number; tokenBudget: number }): Promise<LatestItems> {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  let newest: number | undefined;
  let oldest: number | undefined;
  let count = 0;
  let tokens = 0;
  let complete = true;
  let before: number | undefined;
  let pageSize = FIRST_SIZE_PAGE;
  scan: while (count < limit) {
    const requested = Math.min(pageSize, limit - count);
    const page = await executor
      .selectFrom('conversation_items')
      .select(['seq', ITEM_TOKENS.as('tokens')])
      .where('conversation_id', '=', conversationId)
      .$if(before !== undefined, (query) => query.where('seq', '<', before!))
      .orderBy('seq', 'desc')
      .limit(requested)
      .execute();
    for (const { seq, tokens: itemTokens } of page) {
      tokens += Number(itemTokens);
      if (tokens > options.tokenBudget) {
        complete = false;
        break scan;
      }
      newest ??= seq;
      oldest = seq;
      count++;
    }
    if (page.length < requested) break;
    before = page[page.length - 1].seq;
    pageSize = Math.min(pageSize * 4, MAX_SIZE_PAGE);
  }
  const rows =
    oldest === undefined
      ? []
      : await executor
          .selectFrom('conversation_items')
          .selectAll()
          .where('conversation_id', '=', conversationId)
          .where('seq', '>=', oldest)
          .where('seq', '<=', newest!)
          .orderBy('seq', 'asc')
          .execute();
  return { rows, complete, tokensSeen: tokens };
}

/** ≈4 characters per token plus 4 per item, over the text a model sees of the item (prompt.ts does the same in JS). */
const ITEM_TOKENS = sql<number>`ceil((case type
  when 'message' then (select coalesce(sum(length(part ->> 'text')), 0) from jsonb_array_elements(coalesce(content, '[]'::jsonb)) as part)
  when 'function_call' then length(coalesce(name, '')) + length(coalesce(arguments, ''))
  else length(coalesce(output, '')) end) / 4.0) + 4`;

export async function findItem(
  executor: Db,
  accountId: string,
  conversationId: string,
  itemId: string,
): Promise<ConversationItemRow | undefined> {
  return executor
    .selectFrom('conversation_items')
    .selectAll()
    .where('id', '=', itemId)
    .where('conversation_id', '=', conversationId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

export async function findItemSeq(executor: Db, conversationId: string, itemId: string): Promise<number | undefined> {
  const row = await executor
    .selectFrom('conversation_items')
    .select('seq')
    .where('id', '=', itemId)
    .where('conversation_id', '=', conversationId)
    .executeTakeFirst();
  return row?.seq;
}

export async function deleteItem(executor: Db, accountId: string, conversationId: string, itemId: string): Promise<boolean> {
  const result = await executor
    .deleteFrom('conversation_items')
    .where('id', '=', itemId)
    .where('conversation_id', '=', conversationId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * One page of a conversation's items as a query, so tests can EXPLAIN exactly what listing runs:
 * `conversation_id = ? AND seq > ? ORDER BY seq LIMIT n+1`, served by conversation_items_conversation_seq_idx
 * however deep the cursor is.
 */
export function itemsPageQuery(executor: Db, conversationId: string, page: PageRequest) {
  const query = executor.selectFrom('conversation_items').selectAll().where('conversation_id', '=', conversationId);
  return pageQuery(query, page);
}

/**
 * A page of items stops early (with has_more) once it holds this many bytes: one item may be megabytes (a
 * whole 10 MiB request body), and a page of a hundred such is more than a reply can hold.
 */
const MAX_PAGE_BYTES = 16 * 1024 * 1024;

/** Bytes of an item's stored text, as Postgres computes them without sending the item. */
const ITEM_BYTES = sql<number>`coalesce(octet_length(content::text), 0) + coalesce(octet_length(arguments), 0) + coalesce(octet_length(output), 0)`;

export async function listItems(executor: Db, conversationId: string, page: PageRequest): Promise<Page<ConversationItemRow>> {
  if (page.limit > 1) {
    // Sizes first, in the order the page is read (nearest the cursor first); at least one item always comes back.
    const sizes = await pageQuery(executor.selectFrom('conversation_items').select(['seq', ITEM_BYTES.as('bytes')]).where('conversation_id', '=', conversationId), page).execute();
    let bytes = 0;
    let fitting = 0;
    for (const size of sizes) {
      bytes += Number(size.bytes);
      if (fitting > 0 && bytes > MAX_PAGE_BYTES) break;
      fitting++;
    }
    if (fitting < Math.min(page.limit, sizes.length)) {
      const last = sizes[fitting - 1].seq;
      const query = executor.selectFrom('conversation_items').selectAll().where('conversation_id', '=', conversationId).where('seq', readsAscending(page) ? '<=' : '>=', last);
      const rows = await pageQuery(query, { ...page, limit: fitting }).execute();
      return { rows: page.beforeSeq !== undefined ? rows.reverse() : rows, hasMore: true };
    }
  }
  return finishPage(await itemsPageQuery(executor, conversationId, page).execute(), page);
}

// ---- keyset pagination over `seq` ----

type SeqTable = 'conversations' | 'conversation_items';

/**
 * Keyset pagination: no OFFSET, so page N costs the same as page 1. `before` pages are read walking away
 * from the cursor (nearest rows first) and reversed afterwards, so they come back in the requested order.
 */
function pageQuery<T extends SeqTable, O>(query: SelectQueryBuilder<Database, T, O>, page: PageRequest) {
  const cursor = page.beforeSeq ?? page.afterSeq;
  const readAscending = readsAscending(page);
  let limited = query as unknown as SelectQueryBuilder<Database, SeqTable, O>;
  if (cursor !== undefined) limited = limited.where('seq', readAscending ? '>' : '<', cursor);
  return limited.orderBy('seq', readAscending ? 'asc' : 'desc').limit(page.limit + 1);
}

/** The direction a page's rows are read in: the requested order, or its opposite for `before`. */
function readsAscending(page: PageRequest): boolean {
  return (page.order === 'asc') !== (page.beforeSeq !== undefined);
}

function finishPage<Row>(rows: Row[], page: PageRequest): Page<Row> {
  const hasMore = rows.length > page.limit;
  const kept = rows.slice(0, page.limit);
  if (page.beforeSeq !== undefined) kept.reverse();
  return { rows: kept, hasMore };
}

async function runPage<T extends SeqTable, O>(query: SelectQueryBuilder<Database, T, O>, page: PageRequest): Promise<Page<O>> {
  return finishPage(await pageQuery(query, page).execute(), page);
}

function itemToValues(item: NewConversationItem, conversationId: string, accountId: string, responseId: string | null) {
  const common = {
    id: item.id ?? newId(item.type === 'message' ? 'msg' : item.type === 'function_call' ? 'fc' : 'fco'),
    conversation_id: conversationId,
    account_id: accountId,
    type: item.type,
    status: item.status ?? ('completed' as const),
    response_id: responseId,
    metadata: '{}',
  };
  switch (item.type) {
    case 'message': {
      const content: ContentPart[] =
        typeof item.content === 'string'
          ? [{ type: item.role === 'assistant' ? 'output_text' : 'input_text', text: item.content }]
          : item.content;
      return { ...common, role: item.role, content: JSON.stringify(content), call_id: null, name: null, arguments: null, output: null };
    }
    case 'function_call':
      return { ...common, role: null, content: 'null', call_id: item.callId, name: item.name, arguments: item.arguments, output: null };
    case 'function_call_output':
      return { ...common, role: null, content: 'null', call_id: item.callId, name: null, arguments: null, output: item.output };
  }
}

// ---- row → wire ----


export function conversationToWire(row: ConversationRow) {
  return { id: row.id, object: 'conversation' as const, created_at: toUnixSeconds(row.created_at), metadata: row.metadata ?? {} };
}

/** The item as the API returns it: content parts for messages, call fields for tool items, `response_id` when set. */
export function itemToWire(row: ConversationItemRow) {
  const base = { id: row.id, object: 'conversation.item' as const, type: row.type };
  const tail = {
    created_at: toUnixSeconds(row.created_at),
    metadata: row.metadata ?? {},
    ...(row.response_id ? { response_id: row.response_id } : {}),
  };
  switch (row.type) {
    case 'message':
      return { ...base, role: row.role, status: row.status, content: row.content ?? [], ...tail };
    case 'function_call':
      return { ...base, status: row.status, call_id: row.call_id, name: row.name, arguments: row.arguments, ...tail };
    case 'function_call_output':
      return { ...base, status: row.status, call_id: row.call_id, output: row.output, ...tail };
  }
}

export type ConversationItemWire = ReturnType<typeof itemToWire>;
