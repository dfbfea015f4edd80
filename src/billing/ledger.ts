import { sql } from 'kysely';
import { inTransaction, type Db } from '../db/database';
import { paymentRequired } from '../errors';
import { newId } from '../ids';
import type { LedgerTransactionRow, TokenUsage } from './ledger.table';

export const CURRENCY = 'RUB';

export interface DebitInput {
  accountId: string;
  /** Whole kopecks; a zero amount writes nothing. */
  amount: number;
  /** Unique per billed operation (e.g. `response:resp_…`): a retried debit never charges twice. */
  operationKey: string;
  metadata: Record<string, unknown>;
  usage?: TokenUsage | null;
}

/**
 * The ledger: every balance change is one transaction row plus an atomic `balance ± amount` update in the
 * same database transaction, so `balance = credits − debits` holds under any concurrency.
 */
export function createLedger(db: Db) {
  async function credit(
    executor: Db,
    input: { accountId: string; amount: number; metadata?: Record<string, unknown>; operationKey?: string },
  ): Promise<LedgerTransactionRow> {
    return inTransaction(executor, async (trx) => {
      const row = await trx
        .insertInto('ledger_transactions')
        .values({
          id: newId('txn'),
          account_id: input.accountId,
          type: 'credit',
          amount: input.amount,
          currency: CURRENCY,
          metadata: JSON.stringify(input.metadata ?? {}),
          operation_key: input.operationKey ?? null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx.updateTable('accounts').set({ balance: sql`balance + ${input.amount}` }).where('id', '=', input.accountId).execute();
      return row;
    });
  }

  /**
   * Idempotent debit; returns the transaction (the existing one when the operation was already billed).
   *
   * One statement: the ledger row and the balance change are written by a data-modifying CTE, so the
   * account row is locked only inside the database, for the statement and its commit. As a
   * BEGIN/INSERT/UPDATE/COMMIT sequence the row stayed locked across a client round trip (the COMMIT had
   * to wait for a busy event loop), which serialised every debit of one account behind that latency and
   * capped a busy account at a few hundred debits per second. Same atomicity: both writes or neither.
   */
  async function debit(executor: Db, input: DebitInput): Promise<LedgerTransactionRow | null> {
    if (input.amount <= 0) return null;
    const inserted = await executor
      .with('inserted', (db) =>
        db
          .insertInto('ledger_transactions')
          .values({
            id: newId('txn'),
            account_id: input.accountId,
            type: 'debit',
            amount: input.amount,
            currency: CURRENCY,
            metadata: JSON.stringify(input.metadata),
            usage: JSON.stringify(input.usage ?? null),
            operation_key: input.operationKey,
          })
          .onConflict((oc) => oc.columns(['account_id', 'operation_key']).doNothing())
          .returningAll(),
      )
      .with('charged', (db) =>
        db
          .updateTable('accounts')
          .set({ balance: sql`balance - ${input.amount}` })
          .where('id', '=', input.accountId)
          .where(sql<boolean>`exists (select 1 from inserted)`)
          .returning('id'),
      )
      .selectFrom('inserted')
      .selectAll()
      .executeTakeFirst();
    if (inserted) return inserted;
    // Already billed (a retry, or a concurrent duplicate that committed first): the original row.
    return executor
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('account_id', '=', input.accountId)
      .where('operation_key', '=', input.operationKey)
      .executeTakeFirstOrThrow();
  }

  /**
   * DECISIONS.md 11: a billable operation is refused with 402 when the balance is ≤ 0. `knownBalance` is the
   * balance already read in this request (with the API key), which saves the query.
   */
  async function assertCanSpend(accountId: string, knownBalance?: number): Promise<void> {
    const balance = knownBalance ?? (await db.selectFrom('accounts').select('balance').where('id', '=', accountId).executeTakeFirst())?.balance;
    if (balance === undefined || balance <= 0) throw paymentRequired();
  }

  return { credit: (input: Parameters<typeof credit>[1], executor: Db = db) => credit(executor, input), debit: (input: DebitInput, executor: Db = db) => debit(executor, input), assertCanSpend };
}

export type Ledger = ReturnType<typeof createLedger>;

export function transactionToWire(row: LedgerTransactionRow) {
  return {
    id: row.id,
    type: row.type,
    amount: row.amount,
    currency: row.currency,
    metadata: row.metadata,
    usage: row.usage ?? null,
    created_at: row.created_at.toISOString(),
  };
}
