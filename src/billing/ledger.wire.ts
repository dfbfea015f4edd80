import type { LedgerTransactionRow } from './ledger.table';

/** A transaction as the API shows it; `usage` always an object (tokens; for audio also the characters or seconds billed). */
export function transactionToWire(row: LedgerTransactionRow) {
  return {
    id: row.id,
    type: row.type,
    amount: row.amount,
    currency: row.currency,
    metadata: row.metadata,
    // Always an object (the spec): a credit, and a debit written before usage was recorded for audio, count nothing.
    usage: row.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    created_at: row.created_at.toISOString(),
  };
}
