import type { Db } from '../db/database';
import { MAX_ASSISTANT_ID } from './assistants.schema';
import type { AssistantRow } from './assistants.table';

/** The stored form of an Assistant's settings: everything but id, account and created_at. */
export interface AssistantValues {
  name: string;
  description: string | null;
  model: string;
  vendor: string;
  instructions: string | null;
  reasoningEffort: 'low' | 'medium' | 'high' | null;
  temperature: number | null;
  tools: unknown[];
  toolResources: Record<string, unknown> | null;
  metadata: Record<string, string>;
}

export async function insertAssistant(executor: Db, accountId: string, values: AssistantValues): Promise<AssistantRow> {
  return executor
    .insertInto('assistants')
    .values({ account_id: accountId, ...toColumns(values) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Also what the Responses engine and Runs use to load the Assistant a request names. An id that is not a
 * positive `integer` (a body may name 2147483648) names none: Postgres would refuse the comparison itself.
 */
export async function findAssistant(executor: Db, accountId: string, id: number): Promise<AssistantRow | undefined> {
  if (!Number.isInteger(id) || id < 1 || id > MAX_ASSISTANT_ID) return undefined;
  return executor
    .selectFrom('assistants')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** Full replacement: every settings column is written. */
export async function replaceAssistant(
  executor: Db,
  accountId: string,
  id: number,
  values: AssistantValues,
): Promise<AssistantRow | undefined> {
  return executor
    .updateTable('assistants')
    .set(toColumns(values))
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteAssistant(executor: Db, accountId: string, id: number): Promise<boolean> {
  const result = await executor
    .deleteFrom('assistants')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * Keyset page over the integer id (served by assistants_account_id_idx). The cursor is an id value, so it
 * stays valid even after that Assistant is deleted. `before` pages are read walking away from the
 * cursor and reversed, so they come back in the requested order.
 */
export async function listAssistants(
  executor: Db,
  accountId: string,
  page: { limit: number; order: 'asc' | 'desc'; after?: number; before?: number },
): Promise<AssistantRow[]> {
  const backwards = page.before !== undefined;
  const cursor = page.before ?? page.after;
  const readAscending = (page.order === 'asc') !== backwards;
  let query = executor.selectFrom('assistants').selectAll().where('account_id', '=', accountId);
  if (cursor !== undefined) query = query.where('id', readAscending ? '>' : '<', cursor);
  const rows = await query
    .orderBy('id', readAscending ? 'asc' : 'desc')
    .limit(page.limit)
    .execute();
  return backwards ? rows.reverse() : rows;
}

function toColumns(values: AssistantValues) {
  return {
    name: values.name,
    description: values.description,
    model: values.model,
    vendor: values.vendor,
    instructions: values.instructions,
    reasoning_effort: values.reasoningEffort,
    temperature: values.temperature,
    tools: JSON.stringify(values.tools),
    tool_resources: JSON.stringify(values.toolResources),
    metadata: JSON.stringify(values.metadata),
  };
}
