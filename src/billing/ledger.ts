import { sql } from 'kysely';
import { inTransaction, type Db } from '../db/database';
import { createGroupCommit } from '../db/group-commit';
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

/** The ledger row of a debit, for statements that write one themselves (see debitsFrom). */
export function debitRow(input: DebitInput) {
  return {
    id: newId('txn'),
    account_id: input.accountId,
    type: 'debit' as const,
    amount: input.amount,
    currency: CURRENCY,
    metadata: JSON.stringify(input.metadata),
    usage: JSON.stringify(input.usage ?? null),
    operation_key: input.operationKey,
  };
}

/**
 * The balance side of debits written in the same statement: every ledger row that the CTE named `inserted`
 * actually inserted (an operation already billed inserts nothing, so charges nothing) comes off its
 * account. The one place `balance = credits − debits` is kept for debits: writeDebits and debitsFrom use it.
 */
function chargeInserted(inserted: string) {
  return sql<{ id: string }>`
    update accounts set balance = accounts.balance - totals.total
    from (select account_id, sum(amount) as total from ${sql.table(inserted)} group by account_id) as totals
    where accounts.id = totals.account_id
    returning accounts.id`;
}

/**
 * The whole of a debit, as two CTEs (`debit`, `charged`) for a caller's own statement that decides in the same
 * statement what is billed (a Response's finalisation: one statement, one commit). `billable` names a relation
 * with the columns of debitRow (metadata and usage as JSON text); each of its rows becomes a ledger row and
 * comes off its account's balance, except an operation already billed, which writes and charges nothing.
 */
export function debitsFrom(billable: string) {
  return sql`
    debit as (
      insert into ledger_transactions (id, account_id, type, amount, currency, metadata, usage, operation_key)
      select id, account_id, 'debit', amount, currency, metadata::jsonb, usage::jsonb, operation_key
      from ${sql.table(billable)}
      on conflict (account_id, operation_key) do nothing
      returning account_id, amount),
    charged as (${chargeInserted('debit')})`;
}

const operationOf = (accountId: string, operationKey: string) => `${accountId}\u0000${operationKey}`;

/**
 * The ledger: every balance change is one transaction row plus an atomic `balance ± amount` update in the
 * same database transaction (or statement), so `balance = credits − debits` holds under any concurrency.
 * Nothing else writes ledger rows or balances.
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
   * Inside a caller's transaction it is part of that transaction. Otherwise it is group-committed with
   * the debits of concurrent requests (db/group-commit.ts): every debit of one busy account used to
   * queue on that account row's lock, each holding it through its own commit's fsync (README,
   * "Performance"); a batch takes the lock and the fsync once. The caller still gets its answer only
   * after its debit is committed.
   */
  async function debit(executor: Db, input: DebitInput): Promise<LedgerTransactionRow | null> {
    if (input.amount <= 0) return null;
    // Outside a caller's transaction, debits from concurrent requests are written together.
    if (executor === db) return groupedDebit(input);
    const [row] = await writeDebits(executor, [input]);
    return row!;
  }

  /**
   * The debits in one statement: ledger rows and the balance changes are written by a data-modifying
   * CTE, so account rows are locked only inside the database, for the statement and its commit (as a
   * BEGIN/INSERT/UPDATE/COMMIT sequence the row stayed locked across client round trips, serialising
   * every debit of one account behind event-loop latency). Both writes or neither. An operation already
   * billed (a retry, or a duplicate that committed first) inserts nothing, charges nothing and answers
   * its original row.
   */
  async function writeDebits(executor: Db, inputs: DebitInput[]): Promise<LedgerTransactionRow[]> {
    const rows = inputs.map(debitRow);
    const inserted = await executor
      .with('inserted', (db) =>
        db
          .insertInto('ledger_transactions')
          .values(rows)
          .onConflict((oc) => oc.columns(['account_id', 'operation_key']).doNothing())
          .returningAll(),
      )
      // kysely inlines a raw CTE body as it is: the parentheses are ours.
      .with('charged', () => sql<{ id: string }>`(${chargeInserted('inserted')})`)
      .selectFrom('inserted')
      .selectAll()
      .execute();
    const byOperation = new Map(inserted.map((row) => [operationOf(row.account_id, row.operation_key!), row]));
    const results: LedgerTransactionRow[] = [];
    for (const input of inputs) {
      const key = operationOf(input.accountId, input.operationKey);
      let row = byOperation.get(key);
      if (!row) {
        row = await executor
          .selectFrom('ledger_transactions')
          .selectAll()
          .where('account_id', '=', input.accountId)
          .where('operation_key', '=', input.operationKey)
          .executeTakeFirstOrThrow();
        byOperation.set(key, row);
      }
      results.push(row);
    }
    return results;
  }

  // 9 parameters per row; a few hundred rows stay far below Postgres' 65,535.
  const groupedDebit = createGroupCommit<DebitInput, LedgerTransactionRow>({ maxBatch: 500, write: (inputs) => writeDebits(db, inputs) });

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
