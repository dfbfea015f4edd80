import type { Selectable } from 'kysely';
import type { CreatedAt, JsonDefault, Serial } from '../db/columns';

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface LedgerTransactionsTable {
  seq: Serial;
  id: string;
  account_id: string;
  type: 'debit' | 'credit';
  amount: number;
  currency: string;
  metadata: JsonDefault<Record<string, unknown>>;
  usage: JsonDefault<TokenUsage | null>;
  operation_key: string | null;
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
