import type { ColumnType } from 'kysely';
import type { JsonDefault } from '../db/columns';

/**
 * A request made with an Idempotency-Key (src/idempotency/idempotency.ts). A call whose reply is stored: running,
 * then completed with its reply (or failed, to be run again). A creation: completed, with the id of what it created,
 * in the creation's own transaction.
 */
export interface IdempotencyKeysTable {
  account_id: string;
  /** The endpoint family (`responses`, `runs`, `chat`, `chat.v1`, `embeddings`, `speech`, …): one key may be used on each. */
  scope: string;
  key: string;
  request_hash: string;
  /** The id the call's debit is keyed by: kept across a takeover, so the retry of a crashed call bills once. */
  request_id: string;
  status: 'running' | 'completed' | 'failed';
  /** A stored call's reply; null for a creation. */
  reply: JsonDefault<unknown>;
  /** What a creation created (a Response's, a Run's, a transcription's id); null for a stored call. */
  resource_id: string | null;
  /** Reset when an expired key, or one a crashed call left running, is claimed again. */
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}
