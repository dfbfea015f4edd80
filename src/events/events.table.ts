import type { CreatedAt, Json } from '../db/columns';

/** One row per flushed batch of stream events (never a row per token). */
export interface ResponseEventsTable {
  response_id: string;
  first_seq: number;
  last_seq: number;
  events: Json<Array<Record<string, unknown>>>;
  created_at: CreatedAt;
}
