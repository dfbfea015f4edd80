import type { Db } from '../db/database';
import type { LedgerTransactionRow } from '../billing/ledger.table';

/** Queries over the account's balance and ledger; no transactions, no rules. */
export function createOrganizationRepository(db: Db) {
  /** The balance and what is available of it: less the holds of operations in flight (billing/ledger.ts). */
  async function findBalance(accountId: string): Promise<{ balance: number; available: number } | undefined> {
    const row = await db.selectFrom('accounts').select(['balance', 'held']).where('id', '=', accountId).executeTakeFirst();
    return row && { balance: row.balance, available: row.balance - row.held };
  }

  async function findTransactionSeq(accountId: string, transactionId: string): Promise<number | undefined> {
    const row = await db
      .selectFrom('ledger_transactions')
      .select('seq')
      .where('account_id', '=', accountId)
      .where('id', '=', transactionId)
      .executeTakeFirst();
    return row?.seq;
  }

  /** Newest first by insertion order (`seq`), strictly older than `beforeSeq` when given: a keyset page. */
  async function listTransactions(accountId: string, input: { limit: number; beforeSeq?: number }): Promise<LedgerTransactionRow[]> {
    let query = db.selectFrom('ledger_transactions').selectAll().where('account_id', '=', accountId);
    if (input.beforeSeq !== undefined) query = query.where('seq', '<', input.beforeSeq);
    return query.orderBy('seq', 'desc').limit(input.limit).execute();
  }

  return { findBalance, findTransactionSeq, listTransactions };
}

export type OrganizationRepository = ReturnType<typeof createOrganizationRepository>;
