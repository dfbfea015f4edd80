import type { ColumnType } from 'kysely';
import type { JsonDefault } from '../db/columns';

/** A synchronous call made with an Idempotency-Key: running, then its stored reply (or failed, to be run again). */
export interface IdempotentRepliesTable {
  account_id: string;
  /** The endpoint family (`chat`, `chat.v1`, `embeddings`, `speech`): one key may be used on each. */
  scope: string;
  key: string;
  request_hash: string;
  /** The id the call's debit is keyed by: kept across a takeover, so the retry of a crashed call bills once. */
  request_id: string;
  status: 'running' | 'completed' | 'failed';
  reply: JsonDefault<unknown>;
  /** Reset when an expired key, or one a crashed call left running, is claimed again. */
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}
