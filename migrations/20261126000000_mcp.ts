import { sql, type Kysely } from 'kysely';

/**
 * Remote MCP tools: conversation items of the kinds `mcp_list_tools` (server_label, tools, error) and
 * `mcp_call` (server_label, name, arguments, output, error), and `mcp_calls`, the at-most-once record of
 * each tool call (started before the server is called, its result stored after), so a re-run after a crash
 * returns a finished call's result and never calls a tool a second time.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('conversation_items')
    .addColumn('server_label', 'text')
    .addColumn('tools', 'jsonb')
    .addColumn('error', 'text')
    .execute();
  await db.schema
    .createTable('mcp_calls')
    .addColumn('item_id', 'text', (c) => c.primaryKey())
    .addColumn('response_id', 'text', (c) => c.notNull())
    .addColumn('result', 'jsonb')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('mcp_calls_response_idx').on('mcp_calls').column('response_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mcp_calls').execute();
  await db.schema
    .alterTable('conversation_items')
    .dropColumn('server_label')
    .dropColumn('tools')
    .dropColumn('error')
    .execute();
}
