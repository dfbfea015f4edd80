import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, Json, JsonDefault, Serial } from '../db/columns';

export interface ThreadsTable {
  seq: Serial;
  id: string;
  account_id: string;
  metadata: JsonDefault<Record<string, string>>;
  /** Always null for now (api-decisions 5); kept so the wire shape has a home when it is filled. */
  tool_resources: JsonDefault<Record<string, unknown> | null>;
  created_at: CreatedAt;
}

export type ThreadMessageRole = 'user' | 'assistant';
export type ThreadMessageStatus = 'in_progress' | 'incomplete' | 'completed';
export type TextPart = { type: 'text'; text: string };

/** Optional on insert, nullable, updatable. */
type NullableDefault<T> = ColumnType<T | null, T | null | undefined, T | null>;

export interface ThreadMessagesTable {
  seq: Serial;
  id: string;
  thread_id: string;
  account_id: string;
  role: ThreadMessageRole;
  status: ColumnType<ThreadMessageStatus, ThreadMessageStatus | undefined, ThreadMessageStatus>;
  content: Json<TextPart[]>;
  metadata: JsonDefault<Record<string, string>>;
  /** Set on messages a Run appended: the Assistant and the Run. */
  assistant_id: NullableDefault<number>;
  run_id: NullableDefault<string>;
  /** Bytes of content as text, computed by the database (pages stop at MAX_PAGE_BYTES). */
  stored_bytes: ColumnType<number, never, never>;
  created_at: CreatedAt;
}

export type ThreadRow = Selectable<ThreadsTable>;
export type ThreadMessageRow = Selectable<ThreadMessagesTable>;
