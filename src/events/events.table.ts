import type { CreatedAt, Json } from '../db/columns';

/** One row per flushed batch of a stream's events (never a row per token); a stream is one resource's (`resp_…`). */
export interface StreamEventsTable {
  stream_id: string;
  first_seq: number;
  last_seq: number;
  events: Json<Array<Record<string, unknown>>>;
  created_at: CreatedAt;
}
