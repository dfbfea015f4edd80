import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, JsonDefault, Serial } from '../db/columns';
import type { McpToolDescription } from '../mcp/mcp-types';

export interface ConversationsTable {
  seq: Serial;
  id: string;
  account_id: string;
  metadata: JsonDefault<Record<string, string>>;
  created_at: CreatedAt;
}

export type ContentPart = { type: 'input_text' | 'output_text'; text: string };

export interface ConversationItemsTable {
  seq: Serial;
  id: string;
  conversation_id: string;
  account_id: string;
  type: 'message' | 'function_call' | 'function_call_output' | 'mcp_list_tools' | 'mcp_call';
  role: 'user' | 'assistant' | 'system' | 'developer' | null;
  status: 'completed' | 'in_progress' | 'incomplete';
  content: JsonDefault<ContentPart[] | null>;
  call_id: string | null;
  name: string | null;
  arguments: string | null;
  output: string | null;
  /** mcp_list_tools and mcp_call items. */
  server_label: string | null;
  /** mcp_list_tools: the tools listed. */
  tools: JsonDefault<McpToolDescription[] | null>;
  /** mcp_list_tools and mcp_call: why listing or the call failed. */
  error: string | null;
  response_id: string | null;
  metadata: JsonDefault<Record<string, string>>;
  /** Bytes of content, arguments and output as text, computed by the database (pages stop at MAX_PAGE_BYTES). */
  stored_bytes: ColumnType<number, never, never>;
  created_at: CreatedAt;
}

export type ConversationRow = Selectable<ConversationsTable>;
export type ConversationItemRow = Selectable<ConversationItemsTable>;
