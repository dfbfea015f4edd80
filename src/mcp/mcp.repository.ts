import type { Db } from '../db/database';
import { findChainLink } from '../responses/responses.repository';
import type { McpCallResult, McpListToolsItem } from './mcp-types';

/** How far back a chain of Responses is searched for an earlier listing. */
const MAX_CHAIN_LINKS = 50;

/**
 * The latest successful `mcp_list_tools` item of each of `labels` in the Response's history (its
 * conversation, or its previous_response_id chain), for reuse instead of listing again.
 */
export async function findEarlierListings(
  db: Db,
  response: { account_id: string; conversation_id: string | null; previous_response_id: string | null },
  labels: readonly string[],
): Promise<Map<string, McpListToolsItem>> {
  const found = new Map<string, McpListToolsItem>();
  if (labels.length === 0) return found;
  if (response.conversation_id) {
    const rows = await db
      .selectFrom('conversation_items')
      .select(['id', 'server_label', 'tools'])
      .where('conversation_id', '=', response.conversation_id)
      .where('type', '=', 'mcp_list_tools')
      .where('server_label', 'in', [...labels])
      .where('error', 'is', null)
      .orderBy('seq', 'desc')
      .execute();
    for (const row of rows) {
      if (!found.has(row.server_label!))
        found.set(row.server_label!, {
          id: row.id,
          type: 'mcp_list_tools',
          server_label: row.server_label!,
          tools: row.tools ?? [],
          error: null,
        });
    }
    return found;
  }
  let id = response.previous_response_id;
  for (let links = 0; id && links < MAX_CHAIN_LINKS && found.size < labels.length; links++) {
    const link = await findChainLink(db, response.account_id, id);
    if (!link) break;
    id = link.previous_response_id;
    if (link.deleted_at !== null) continue;
    for (const item of [...link.output].reverse()) {
      if (
        item.type === 'mcp_list_tools' &&
        item.error === null &&
        labels.includes(item.server_label) &&
        !found.has(item.server_label)
      )
        found.set(item.server_label, item);
    }
  }
  return found;
}

/**
 * Claims a tool call before the server is called: true when this is its first start. Otherwise the stored
 * result (a finished call), or null (a call that started and never finished: it may have reached the server).
 */
export async function claimMcpCall(
  db: Db,
  itemId: string,
  responseId: string,
): Promise<{ first: true } | { first: false; result: McpCallResult | null }> {
  const inserted = await db
    .insertInto('mcp_calls')
    .values({ item_id: itemId, response_id: responseId })
    .onConflict((conflict) => conflict.column('item_id').doNothing())
    .returning('item_id')
    .executeTakeFirst();
  if (inserted) return { first: true };
  const row = await db.selectFrom('mcp_calls').select('result').where('item_id', '=', itemId).executeTakeFirstOrThrow();
  return { first: false, result: row.result };
}

export async function storeMcpCallResult(db: Db, result: McpCallResult): Promise<void> {
  await db
    .updateTable('mcp_calls')
    .set({ result: JSON.stringify(result) })
    .where('item_id', '=', result.itemId)
    .execute();
}
