import type { Selectable } from 'kysely';
import type { CreatedAt, JsonDefault, Serial } from '../db/columns';

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
  type: 'message' | 'function_call' | 'function_call_output';
  role: 'user' | 'assistant' | 'system' | 'developer' | null;
  status: 'completed' | 'in_progress' | 'incomplete';
  content: JsonDefault<ContentPart[] | null>;
  call_id: string | null;
  name: string | null;
  arguments: string | null;
  output: string | null;
  response_id: string | null;
  metadata: JsonDefault<Record<string, string>>;
  created_at: CreatedAt;
}

export type ConversationRow = Selectable<ConversationsTable>;
export type ConversationItemRow = Selectable<ConversationItemsTable>;
