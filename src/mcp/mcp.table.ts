import type { ColumnType } from 'kysely';
import type { CreatedAt } from '../db/columns';
import type { McpCallResult } from './mcp-types';

/** One MCP tool call's at-most-once record: claimed before the server is called, its result stored after. */
export interface McpCallsTable {
  item_id: string;
  response_id: string;
  result: ColumnType<McpCallResult | null, string | undefined, string>;
  started_at: CreatedAt;
}
