import { sql, type RawBuilder } from 'kysely';
import { retryingConflicts } from '../db/conflict-retry';
import { inTransaction, type Db } from '../db/database';
import { createGroupCommit } from '../db/group-commit';
import { recordBilled, type Metrics } from '../metrics/metrics';
import { paymentRequired } from '../errors';
import { newId } from '../ids';
import type { LedgerTransactionRow, TransactionUsage } from './ledger.table';

export const CURRENCY = 'RUB';

export interface DebitInput {
  accountId: string;
  /**
   * The exact cost in kopecks, a decimal string (pricing.ts `exact`). The debit is whole kopecks: the cost less
   * the account's carry, rounded up (`debit_operations`). A cost of 0 writes nothing (it only releases the hold).
   */
  cost: string;
  /** Unique per billed operation (e.g. `response:resp_…`): a retried debit never charges twice. */
  operationKey: string;
  metadata: Record<string, unknown>;
  usage?: TransactionUsage | null;
}

export interface HoldRequest {
  accountId: string;
  /** The key its debit will have: the debit settles the hold. */
  operationKey: string;
  /** Whole kopecks: the most the operation can cost. */
  amount: number;
  /** Accept a smaller hold, down to this (an open output cap is then lowered to what it pays). */
  minAmount?: number;
  /** The durable job that will settle it (its finalisation debits with the same key). */
  jobId?: string;
}

/** A row `place_holds` answers: the hold now in effect of the placement at `idx`. */
interface PlacedHold {
  idx: number;
  in_effect: string | number;
}

/** A hold placed, as `placeHolds` answers it: the hold in effect, and the account's available balance after it. */
interface HoldOutcome {
  inEffect: number;
  available: number;
}

/** A hold as `place_holds` takes it: whole kopecks, at least 1. */
export interface HoldPlacement {
  account_id: string;
  operation_key: string;
  amount: number;
  min_amount: number;
  job_id: string | null;
}

/** Whether a hold placed came out below its minimum: the operation is refused (402). */
export const holdRefused = (placement: HoldPlacement, inEffect: number): boolean => inEffect < placement.min_amount;

export function holdPlacement(request: HoldRequest): HoldPlacement {
  const amount = Math.max(1, Math.ceil(request.amount));
  const minAmount = Math.min(amount, Math.max(1, Math.ceil(request.minAmount ?? amount)));
  return {
    account_id: request.accountId,
    operation_key: request.operationKey,
    amount,
    min_amount: minAmount,
    job_id: request.jobId ?? null,
  };
}

/**
 * The ledger row of a debit, as the database function `debit_operations` takes it (a JSON array of these): the one
 * place debits are written, ledger row, hold release, balance and carry together, exact to the kopeck over time
 * (api-decisions 10; migration 20261207000000_debit_operations says how). Its accounts are locked by a statement of
 * their own before the one that prices with their carry, inside the function: one round trip and one commit.
 */
export function debitRow(input: DebitInput) {
  return {
    id: newId('txn'),
    account_id: input.accountId,
    type: 'debit' as const,
    cost: input.cost,
    currency: CURRENCY,
    metadata: JSON.stringify(input.metadata),
    usage: JSON.stringify(input.usage ?? null),
    operation_key: input.operationKey,
  };
}

/**
 * Batches of holds, and of debits, written at once (db/group-commit.ts): each row is decided under its account's
 * lock, so batches of different accounts may commit in any order, and an arrival for an account no batch in flight
 * holds starts beside them instead of waiting. Each takes a pool connection for its statement.
 */
const LEDGER_BATCHES_IN_FLIGHT = 3;

const operationOf = (accountId: string, operationKey: string) => `${accountId}\u0000${operationKey}`;

/**
 * `paysAhead`: an account evidently pays a hold when the available balance this process saw after its last hold for
 * the account, at most PAYS_AHEAD_MS ago, covers PAYS_AHEAD_MARGIN holds of that size. Each answer "yes" spends its
 * hold from what was seen, so a burst of requests between two holds' answers uses up the margin instead of reusing it.
 * At most PAYS_AHEAD_ACCOUNTS accounts are remembered (then the memory starts over).
 */
const PAYS_AHEAD_MARGIN = 10;
const PAYS_AHEAD_MS = 5_000;
const PAYS_AHEAD_ACCOUNTS = 10_000;

/**
 * The ledger: every balance change is one transaction row plus an atomic `balance ± amount` update in the
 * same database transaction (or statement), so `balance = credits − debits` holds under any concurrency.
 * Nothing else writes ledger rows or balances.
 */
export function createLedger(db: Db, options: { owner: string; metrics?: Metrics }) {
  const { owner, metrics } = options;
  /** Each account's available balance after this process's last hold for it, and when that was (paysAhead). */
  const lastAvailable = new Map<string, { available: number; at: number }>();

  /** Billed kopecks and tokens by model, for the debits a statement inserted (not the ones a retry found). */
  function recordDebits(rows: LedgerTransactionRow[]) {
    if (!metrics) return;
    for (const row of rows) {
      recordBilled(metrics, {
        model: typeof row.metadata?.model === 'string' ? row.metadata.model : 'none',
        service: typeof row.metadata?.service === 'string' ? row.metadata.service : 'other',
        amount: Number(row.amount),
        inputTokens: row.usage?.prompt_tokens,
        outputTokens: row.usage?.completion_tokens,
      });
    }
  }
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
      await trx
        .updateTable('accounts')
        .set({ balance: sql`balance + ${input.amount}` })
        .where('id', '=', input.accountId)
        .execute();
      return row;
    });
  }

  /**
   * Idempotent debit, which settles the operation's hold (`debit_operations`); returns the transaction (the existing one
   * when the operation was already billed; null for a cost of 0, which only releases the hold).
   * Inside a caller's transaction it is part of that transaction. Otherwise it is group-committed with
   * the debits of concurrent requests (db/group-commit.ts): every debit of one busy account used to
   * queue on that account row's lock, each holding it through its own commit's fsync (README,
   * "Performance"); a batch takes the lock and the fsync once. The caller still gets its answer only
   * after its debit is committed.
   */
  async function debit(executor: Db, input: DebitInput): Promise<LedgerTransactionRow | null> {
    // Outside a caller's transaction, debits from concurrent requests are written together.
    if (executor === db) return groupedDebit(input);
    const [row] = await writeDebits(executor, [input]);
    return row!;
  }

  /**
   * The debits in one statement (`debit_operations` over the inputs as JSON): ledger rows, hold releases and the
   * balance changes are written inside the database, so account rows are locked only there, for the function and
   * its commit (as a BEGIN/lock/debit/COMMIT sequence the rows stayed locked across client round trips,
   * serialising every debit of one account behind event-loop latency). All of it or nothing. An
   * operation already billed (a retry, or a duplicate that committed first) inserts nothing, charges nothing and
   * answers its original row; a cost of 0 only releases the operation's hold.
   */
  async function writeDebits(executor: Db, inputs: DebitInput[]): Promise<Array<LedgerTransactionRow | null>> {
    const rows = inputs.map(debitRow);
    const { rows: inserted } = await sql<LedgerTransactionRow>`
      select * from debit_operations(${JSON.stringify(rows)}::jsonb)`.execute(executor);
    recordDebits(inserted);
    const byOperation = new Map(inserted.map((row) => [operationOf(row.account_id, row.operation_key!), row]));
    const results: Array<LedgerTransactionRow | null> = [];
    for (const input of inputs) {
      if (!(Number(input.cost) > 0)) {
        results.push(null);
        continue;
      }
      const key = operationOf(input.accountId, input.operationKey);
      let row = byOperation.get(key);
      if (!row) {
        row = await findOperation(input.accountId, input.operationKey, executor);
        if (row) byOperation.set(key, row);
        else if (
          !(await executor.selectFrom('accounts').select('id').where('id', '=', input.accountId).executeTakeFirst())
        ) {
          throw new Error(`No debit written: there is no account ${input.accountId}.`);
        }
      }
      results.push(row ?? null);
    }
    return results;
  }

  // 9 parameters per row; a few hundred rows stay far below Postgres' 65,535.
  const groupedDebit = createGroupCommit<DebitInput, LedgerTransactionRow | null>({
    maxBatch: 500,
    maxInFlight: LEDGER_BATCHES_IN_FLIGHT,
    keyOf: (input) => input.accountId,
    write: (inputs) => retryingConflicts(() => writeDebits(db, inputs)),
    onBatch: (size) => metrics?.groupCommitBatch.observe({ writer: 'ledger_debits' }, size),
  });

  /**
   * Places (or raises) the hold of an operation, atomically with the check that it fits the available balance
   * (`balance - held`, read under the account row's lock in the same statement): as much as `amount` allows,
   * at least `minAmount` (default: all of it), or nothing and 402 `organization.payment_required` (docs/api-decisions.md
   * 25). Answers the operation's hold now in effect, which a caller with an open output cap turns into the cap
   * it can pay. A hold already as large as `amount` is left as it is. Every hold is at least 1 kopeck, so a free
   * model still needs a positive balance (api-decisions 11). The operation's debit (same key) settles it.
   *
   * Inside a caller's transaction it is part of that transaction. Otherwise it is group-committed with the holds
   * of concurrent requests, in the order they were asked for: each used to lock its account's row through its own
   * statement and commit, so the holds of one busy account queued on that lock; a batch takes it once. Both run
   * the database function `place_holds` (migrations 20261130000000 and 20261201000000), which places each hold as
   * if alone. Its account lock is `for no key update`, like the debit's: a caller's transaction that first wrote
   * rows referring to the account (holding the foreign key's key-share lock) does not deadlock with another.
   */
  async function hold(request: HoldRequest, executor: Db = db): Promise<number> {
    const placement = holdPlacement(request);
    const { inEffect, available } =
      executor === db ? await groupedHold(placement) : (await placeHolds(executor, [placement]))[0]!;
    // Inside a caller's transaction the balance seen may yet roll back: only a committed one is remembered.
    if (executor === db) {
      if (lastAvailable.size >= PAYS_AHEAD_ACCOUNTS && !lastAvailable.has(placement.account_id)) lastAvailable.clear();
      lastAvailable.set(placement.account_id, { available, at: Date.now() });
    }
    if (holdRefused(placement, inEffect)) throw await refusal(placement, executor);
    return inEffect;
  }

  /**
   * Whether the account evidently pays this hold in full, by what this process saw of its available balance after
   * its last hold for it (PAYS_AHEAD_MARGIN, PAYS_AHEAD_MS); no database round trip. A chat completion then starts
   * its vendor call beside the hold rather than after it (chat.service.ts), using nothing the vendor answers before
   * the hold is placed: the hold stays the one check of the balance, and a wrong guess (the balance spent meanwhile
   * by other processes) costs only the vendor call it aborts.
   */
  function paysAhead(request: HoldRequest): boolean {
    const seen = lastAvailable.get(request.accountId);
    const amount = holdPlacement(request).amount;
    if (!seen || Date.now() - seen.at > PAYS_AHEAD_MS || seen.available < PAYS_AHEAD_MARGIN * amount) return false;
    seen.available -= amount;
    return true;
  }

  /**
   * The 402 of a hold that did not fit: how much must be available for the request and how much is (read after the
   * refusal, so a figure of that moment; the refusal itself was decided under the account row's lock). A balance
   * that looks sufficient but is held by operations in flight says so.
   */
  async function refusal(placement: HoldPlacement, executor: Db = db) {
    const account = await executor
      .selectFrom('accounts')
      .select(['balance', 'held'])
      .where('id', '=', placement.account_id)
      .executeTakeFirst();
    if (!account) return paymentRequired();
    const balance = Number(account.balance);
    const held = Number(account.held);
    const available = Math.max(0, balance - held);
    const needs =
      placement.min_amount === placement.amount ? 'the most it can cost' : 'its input and at least one output token';
    return paymentRequired(
      `This request needs ${placement.min_amount} kopecks available (${needs}); the account has ${available} available ` +
        `(balance ${balance}${held > 0 ? `, of which ${held} held by operations in flight` : ''}). Top up the balance to continue.`,
    );
  }

  /**
   * The holds in one statement; the hold now in effect of each, in order. `durable: false` (holds of requests, not of
   * jobs) commits without waiting for the WAL to reach the disk (`synchronous_commit` off for this commit
   * only): the hold is visible to every other statement at once, which is all that keeps concurrent requests from
   * overdrawing, and it is on disk as soon as any later commit on the server is, since the WAL is written in order;
   * the request's own debit, a durable commit, comes after it. Only a crash of Postgres before any such commit
   * loses it, and then the request it held for could not be billed either (its debit, retried once Postgres is
   * back, charges what the balance allows: api-decisions 10). One fsync fewer per request.
   */
  async function placeHolds(
    executor: Db,
    placements: HoldPlacement[],
    options: { durable: boolean } = { durable: true },
  ): Promise<HoldOutcome[]> {
    const query = sql<PlacedHold & { available_after: string | number | null }>`
      select idx, in_effect, available_after
      from ${placeHoldsCall(placements.map((placement, idx) => ({ ...placement, idx })))}`;
    const result = await (
      options.durable
        ? query
        : sql<PlacedHold & { available_after: string | number | null }>`
      select placed.*
      from (select set_config('synchronous_commit', 'off', true)) as relaxed, (${query}) as placed`
    ).execute(executor);
    const outcomes = placements.map((): HoldOutcome => ({ inEffect: 0, available: 0 }));
    for (const row of result.rows)
      outcomes[row.idx] = { inEffect: Number(row.in_effect), available: Number(row.available_after ?? 0) };
    return outcomes;
  }

  /**
   * The query that places holds (`place_holds`, each as if alone), answering `(idx, in_effect)` per hold: for
   * `placeHolds`, and for a statement that writes what the holds pay for in the same commit (a Response's
   * creation). A caller must refuse (402) an operation whose hold in effect is `holdRefused`.
   */
  function placeHoldsQuery(placements: Array<HoldPlacement & { idx: number }>) {
    return sql<PlacedHold>`select idx, in_effect from ${placeHoldsCall(placements)}`;
  }

  /** The call of `place_holds` (migrations 20261130000000 to 20261209000000) over the placements, as a relation. */
  const placeHoldsCall = (placements: Array<HoldPlacement & { idx: number }>) =>
    sql`place_holds(${JSON.stringify(placements)}::jsonb, ${owner})`;

  // 6 fields per hold in one jsonb parameter: the batch size is bounded only to keep each statement short.
  const groupedHold = createGroupCommit<HoldPlacement, HoldOutcome>({
    maxBatch: 500,
    maxInFlight: LEDGER_BATCHES_IN_FLIGHT,
    keyOf: (placement) => placement.account_id,
    // A job's hold (a later round's) stays durable with the job's other state; requests' own holds need not wait.
    write: (placements) =>
      retryingConflicts(() =>
        placeHolds(db, placements, { durable: placements.some((placement) => placement.job_id !== null) }),
      ),
    onBatch: (size) => metrics?.groupCommitBatch.observe({ writer: 'ledger_holds' }, size),
  });

  /** Releases an operation's hold without a debit (it failed before anything was billable); a no-op without one. */
  async function release(accountId: string, operationKey: string, executor: Db = db): Promise<void> {
    const statement = () =>
      sql`
      with released as (delete from ledger_holds where account_id = ${accountId} and operation_key = ${operationKey} returning account_id, amount)
      update accounts set held = accounts.held - released.amount from released where accounts.id = released.account_id`.execute(
        executor,
      );
    // Inside a caller's transaction a conflict is the caller's to retry (it rolled back all of it).
    await (executor.isTransaction ? statement() : retryingConflicts(statement));
  }

  /**
   * Runs `operation` (one request's vendor call and its debit) under a hold: placed first, released when the
   * operation throws (after a debit that committed, the release finds nothing).
   */
  async function withHold<T>(request: HoldRequest, operation: (held: number) => Promise<T>): Promise<T> {
    const held = await hold(request);
    try {
      return await operation(held);
    } catch (error) {
      await release(request.accountId, request.operationKey).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Releases the holds nobody will settle: those placed for a request being served or for a job never written
   * (its creation died or failed between the hold and the insert) by a dead process (`ownerDied`, an SQL
   * condition on the `owner` column), or by any process, this one included, longer than `maxAgeMs` ago (no
   * request lasts that long: its error path failed to release it); and those of a finished job. A written job's
   * hold waits for its takeover, whose finalisation settles it. Answers how many holds were released.
   */
  async function releaseAbandoned(options: { ownerDied: RawBuilder<boolean>; maxAgeMs: number }): Promise<number> {
    const released = await sql<{ id: string }>`
      with released as (
        delete from ledger_holds as h
        where ((h.job_id is null or not exists (select 1 from jobs where jobs.id = h.job_id))
                and ((h.owner <> ${owner} and ${options.ownerDied}) or h.created_at < now() - ${options.maxAgeMs} * interval '1 millisecond'))
          or (h.job_id is not null and exists (select 1 from jobs where jobs.id = h.job_id and jobs.status in ('completed', 'failed')))
        returning h.account_id, h.amount),
      totals as (select account_id, sum(amount) as amount from released group by account_id)
      update accounts set held = accounts.held - totals.amount from totals where accounts.id = totals.account_id
      returning accounts.id`.execute(db);
    return released.rows.length;
  }

  /** The transaction an operation (its key) wrote on the account, if any. */
  function findOperation(accountId: string, operationKey: string, executor: Db = db) {
    return executor
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('operation_key', '=', operationKey)
      .executeTakeFirst();
  }

  return {
    findOperation,
    credit: (input: Parameters<typeof credit>[1], executor: Db = db) => credit(executor, input),
    debit: (input: DebitInput, executor: Db = db) => debit(executor, input),
    hold,
    paysAhead,
    refusal,
    placeHoldsQuery,
    release,
    withHold,
    releaseAbandoned,
  };
}

export type Ledger = ReturnType<typeof createLedger>;
