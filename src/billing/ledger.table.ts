import type { Selectable } from 'kysely';
import type { CreatedAt, JsonDefault, Serial } from '../db/columns';

/** A debit's usage: tokens, and for audio the billed characters (speech) or seconds (transcription). */
export interface TransactionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  characters?: number;
  seconds?: number;
}

export interface LedgerTransactionsTable {
  seq: Serial;
  id: string;
  account_id: string;
  type: 'debit' | 'credit';
  amount: number;
  currency: string;
  metadata: JsonDefault<Record<string, unknown>>;
  usage: JsonDefault<TransactionUsage | null>;
  operation_key: string | null;
  /** A debit's exact cost in kopecks (numeric, as text); null for credits and debits from before the carry. */
  cost: string | null;
  created_at: CreatedAt;
}

export type LedgerTransactionRow = Selectable<LedgerTransactionsTable>;

/** An open hold: the most a billable operation in flight can still cost (migrations/20261127000000_holds.ts). */
export interface LedgerHoldsTable {
  account_id: string;
  operation_key: string;
  amount: number;
  /** The durable job that settles it; null for an operation within one request. */
  job_id: string | null;
  /** The process that placed it (its engine's lease owner name). */
  owner: string;
  created_at: CreatedAt;
}
