import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, Json, JsonDefault, NullableTimestamp, Serial } from '../db/columns';
import type { ResponseRequest, ResponseUsage, OutputItem, ResponseStatus, ResponseErrorBody } from './response-types';

export interface ResponsesTable {
  seq: Serial;
  id: string;
  account_id: string;
  status: ResponseStatus;
  background: boolean;
  model: string;
  vendor: string;
  assistant_id: number | null;
  conversation_id: string | null;
  previous_response_id: string | null;
  request: Json<ResponseRequest>;
  output: JsonDefault<OutputItem[]>;
  usage: JsonDefault<ResponseUsage | null>;
  error: JsonDefault<ResponseErrorBody | null>;
  incomplete_details: JsonDefault<{ reason: string } | null>;
  metadata: JsonDefault<Record<string, string>>;
  created_at: CreatedAt;
  started_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  cancel_requested_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
}

export interface IdempotencyKeysTable {
  account_id: string;
  key: string;
  request_hash: string;
  response_id: string;
  /** Reset when an expired key (older than 24 h) is claimed again. */
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export type ResponseRow = Selectable<ResponsesTable>;
