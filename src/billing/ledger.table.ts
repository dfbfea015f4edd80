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
