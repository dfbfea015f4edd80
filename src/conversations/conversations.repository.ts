import { sql } from 'kysely';
import type { Db } from '../db/database';
import { pageQuery, runPage, runPageWithinBytes, type Page, type PageRequest } from '../db/keyset-page';
import { latestWithinBudget, type LatestRows } from '../db/latest-within-budget';
import { notFound } from '../errors';
import { newId } from '../ids';
import type { McpToolDescription } from '../mcp/mcp-types';
import type { ContentPart, ConversationItemRow, ConversationRow } from './conversations.table';

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
  | { type: 'function_call_output'; callId: string; output: string; status?: ItemStatus; id?: string }
  | {
      type: 'mcp_list_tools';
      serverLabel: string;
      tools: McpToolDescription[];
      error: string | null;
      status?: ItemStatus;
      id: string;
    }
  | {
      type: 'mcp_call';
      serverLabel: string;
      name: string;
      arguments: string;
      output: string | null;
      error: string | null;
      status: ItemStatus;
      id: string;
    };

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

export async function findConversation(
  executor: Db,
  accountId: string,
  id: string,
): Promise<ConversationRow | undefined> {
  return executor
    .selectFrom('conversations')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
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
  const result = await executor
    .deleteFrom('conversations')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function findConversationSeq(executor: Db, accountId: string, id: string): Promise<number | undefined> {
  const row = await executor
    .selectFrom('conversations')
    .select('seq')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row?.seq;
}

export async function listConversations(
  executor: Db,
  accountId: string,
  page: PageRequest,
): Promise<Page<ConversationRow>> {
  const query = executor.selectFrom('conversations').selectAll().where('account_id', '=', accountId);
  return runPage(query, page);
}

// ---- items ----

/**
 * Appends items in the given order (their `seq` follows the array). Used by the API and by the Responses
 * engine, which passes `responseId` (api-decisions 21). Items that carry an `id` already stored in this
 * conversation are kept as they are, so a retried activity never appends twice.
 * Call it inside a transaction: it locks the conversation row (FOR NO KEY UPDATE) until commit, so appends to
 * one conversation are serialised. Each append's items then get contiguous `seq` values, and no append can
 * commit a smaller `seq` after a reader has paged past it. A concurrent delete waits as well.
 */
export async function appendItems(
  executor: Db,
  input: {
    conversationId: string;
    accountId: string;
    items: NewConversationItem[];
    responseId?: string | null;
    /**
     * Items already stored take the given state (status, content, call fields) instead of being kept as they are:
     * a Response's output items, appended in progress while it generates and brought to their final state when it
     * ends (api-decisions 30). Only items of the same conversation and Response are updated; none moves.
     */
    update?: boolean;
  },
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

  const values = input.items.map((item) =>
    itemToValues(item, input.conversationId, input.accountId, input.responseId ?? null),
  );
  await executor
    .insertInto('conversation_items')
    .values(values)
    .onConflict((conflict) =>
      input.update
        ? conflict
            .column('id')
            .doUpdateSet((eb) => ({
              status: eb.ref('excluded.status'),
              content: eb.ref('excluded.content'),
              arguments: eb.ref('excluded.arguments'),
              output: eb.ref('excluded.output'),
              error: eb.ref('excluded.error'),
              tools: eb.ref('excluded.tools'),
            }))
            .whereRef('conversation_items.conversation_id', '=', 'excluded.conversation_id')
            .where('conversation_items.response_id', 'is not', null)
            .whereRef('conversation_items.response_id', '=', 'excluded.response_id')
        : conflict.column('id').doNothing(),
    )
    .execute();
  const rows = await executor
    .selectFrom('conversation_items')
    .selectAll()
    .where('conversation_id', '=', input.conversationId)
    .where(
      'id',
      'in',
      values.map((value) => value.id),
    )
    .orderBy('seq', 'asc')
    .execute();
  if (rows.length !== values.length) {
    // Only possible when a caller-chosen id already belongs to another conversation.
    throw new Error(`appendItems: ${values.length - rows.length} item id(s) already exist in another conversation`);
  }
  return rows;
}

/** The history the engine sends to a model: the latest items that fit a token budget (see listLatestItemsWithin). */
export type LatestItems = LatestRows<ConversationItemRow>;

/**
 * The latest items of a conversation (at most `limit`), oldest first, as many as fit `tokenBudget` by the
 * estimate of ITEM_TOKENS. Their sizes are read first, newest first and in growing pages, and only the items that
 * fit are loaded (src/db/latest-within-budget.ts): a conversation may hold gigabytes, and a prompt never needs
 * more than a context window of it. The estimate counts characters as Postgres does (an astral character is
 * one), so it never exceeds the prompt builder's estimate of the same item.
 */
export async function listLatestItemsWithin(
  executor: Db,
  conversationId: string,
  options: {
    limit?: number;
    tokenBudget: number;
    /** The Response the history is for: its own items are its input (and output), never its history. */
    responseId?: string;
    /** Only items before this `seq` (the Response's first input item): what came after it is not its context. */
    beforeSeq?: number;
  },
): Promise<LatestItems> {
  // An item in progress (the message of a Response still generating) is nobody's context yet (api-decisions 30).
  const items = executor
    .selectFrom('conversation_items')
    .where('conversation_id', '=', conversationId)
    .where('status', '<>', 'in_progress')
    .$if(options.responseId !== undefined, (query) =>
      query.where((eb) => eb.or([eb('response_id', 'is', null), eb('response_id', '<>', options.responseId!)])),
    )
    .$if(options.beforeSeq !== undefined, (query) => query.where('seq', '<', options.beforeSeq!));
  return latestWithinBudget(items.selectAll(), items.select(['seq', ITEM_TOKENS.as('tokens')]), options);
}

/** The smallest `seq` of the given items of a conversation (undefined when none of them is stored). */
export async function firstItemSeq(
  executor: Db,
  conversationId: string,
  itemIds: readonly string[],
): Promise<number | undefined> {
  if (itemIds.length === 0) return undefined;
  const row = await executor
    .selectFrom('conversation_items')
    .select((eb) => eb.fn.min('seq').as('seq'))
    .where('id', 'in', [...itemIds])
    .where('conversation_id', '=', conversationId)
    .executeTakeFirst();
  return row?.seq === null || row?.seq === undefined ? undefined : Number(row.seq);
}

/**
 * Deletes the items a Response appended to a conversation, except `keepIds` (its input): the output of a Response
 * that failed or was cancelled (api-decisions 30). Only items from `fromSeq` on are looked at (the Response's first
 * input item: its output can only follow it), so a long conversation is not scanned.
 */
export async function deleteResponseItems(
  executor: Db,
  input: { conversationId: string; responseId: string; keepIds: readonly string[]; fromSeq?: number },
): Promise<number> {
  const result = await executor
    .deleteFrom('conversation_items')
    .where('conversation_id', '=', input.conversationId)
    .where('response_id', '=', input.responseId)
    .$if(input.fromSeq !== undefined, (query) => query.where('seq', '>=', input.fromSeq!))
    .$if(input.keepIds.length > 0, (query) => query.where('id', 'not in', [...input.keepIds]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** ≈4 characters per token plus 4 per item, over the text a model sees of the item (prompt.ts does the same in JS). */
const ITEM_TOKENS = sql<number>`case type when 'mcp_list_tools' then 0 else ceil((case type
  when 'message' then (select coalesce(sum(length(part ->> 'text')), 0) from jsonb_array_elements(coalesce(content, '[]'::jsonb)) as part)
  when 'function_call' then length(coalesce(name, '')) + length(coalesce(arguments, ''))
  when 'mcp_call' then length(coalesce(name, '')) + length(coalesce(arguments, '')) + length(coalesce(output, '')) + length(coalesce(error, ''))
  else length(coalesce(output, '')) end) / 4.0) + 4 end`;

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

export async function deleteItem(
  executor: Db,
  accountId: string,
  conversationId: string,
  itemId: string,
): Promise<boolean> {
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

/** A page of items; it stops early, with has_more, at MAX_PAGE_BYTES of item text (at least one item comes back). */
export async function listItems(
  executor: Db,
  conversationId: string,
  page: PageRequest,
): Promise<Page<ConversationItemRow>> {
  const items = executor.selectFrom('conversation_items').where('conversation_id', '=', conversationId);
  return runPageWithinBytes(items.selectAll(), items.select(['seq', 'stored_bytes as bytes']), page);
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
      return {
        ...common,
        role: item.role,
        content: JSON.stringify(content),
        call_id: null,
        name: null,
        arguments: null,
        output: null,
      };
    }
    case 'function_call':
      return {
        ...common,
        role: null,
        content: 'null',
        call_id: item.callId,
        name: item.name,
        arguments: item.arguments,
        output: null,
      };
    case 'function_call_output':
      return {
        ...common,
        role: null,
        content: 'null',
        call_id: item.callId,
        name: null,
        arguments: null,
        output: item.output,
      };
    case 'mcp_list_tools':
      return {
        ...common,
        role: null,
        content: 'null',
        call_id: null,
        name: null,
        arguments: null,
        output: null,
        server_label: item.serverLabel,
        tools: JSON.stringify(item.tools),
        error: item.error,
      };
    case 'mcp_call':
      return {
        ...common,
        role: null,
        content: 'null',
        call_id: null,
        name: item.name,
        arguments: item.arguments,
        output: item.output,
        server_label: item.serverLabel,
        error: item.error,
      };
  }
}
