import type { Selectable } from 'kysely';
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

export type ResponseRow = Selectable<ResponsesTable>;
