import { sql, type Insertable } from 'kysely';
import type { Db } from '../db/database';
import type { JobAdmission } from '../engine/engine';
import { finishPage, pageQuery, type Page, type PageRequest } from '../db/keyset-page';
import type { RunRound, RunRow, RunsTable, RunStatus, RunUsage } from './runs.table';

/** The Runs' queries: every status change is guarded by the status it leaves, so a race changes nothing twice. */

const ACTIVE = sql<boolean>`status in ('queued', 'in_progress', 'requires_action', 'cancelling')`;
const NULL = sql<string>`null`;

/**
 * A new Run and its job row (its admission's outbox row) in one statement. Answers undefined when the thread already
 * has an active Run (the partial unique index `runs_one_active_per_thread`), writing nothing.
 */
export async function insertRun(
  executor: Db,
  values: Insertable<RunsTable> & { id: string },
  admission: JobAdmission,
): Promise<RunRow | undefined> {
  return executor
    .with('run', (qb) =>
      qb
        .insertInto('runs')
        .values(values)
        // The index predicate as literal text: with parameters in its place a generic plan (a prepared
        // statement's sixth execution) cannot prove it, and Postgres finds no index to arbitrate on.
        .onConflict((oc) => oc.column('thread_id').where(ACTIVE).doNothing())
        .returningAll(),
    )
    .with('outbox', admission.outbox('run'))
    .selectFrom('run')
    .selectAll()
    .executeTakeFirst();
}

export async function findRun(
  executor: Db,
  accountId: string,
  threadId: string,
  id: string,
): Promise<RunRow | undefined> {
  return executor
    .selectFrom('runs')
    .selectAll()
    .where('id', '=', id)
    .where('thread_id', '=', threadId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** A Run by id alone: for its own job. Undefined only if it never existed. */
export async function loadRun(executor: Db, id: string): Promise<RunRow | undefined> {
  return executor.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findRunSeq(executor: Db, threadId: string, id: string): Promise<number | undefined> {
  const row = await executor
    .selectFrom('runs')
    .select('seq')
    .where('id', '=', id)
    .where('thread_id', '=', threadId)
    .executeTakeFirst();
  return row?.seq;
}

export async function listRuns(executor: Db, threadId: string, page: PageRequest): Promise<Page<RunRow>> {
  return finishPage(
    await pageQuery(executor.selectFrom('runs').selectAll().where('thread_id', '=', threadId), page).execute(),
    page,
  );
}

export async function findActiveRuns(executor: Db, threadId: string): Promise<RunRow[]> {
  return executor.selectFrom('runs').selectAll().where('thread_id', '=', threadId).where(ACTIVE).execute();
}

export async function updateRunMetadata(
  executor: Db,
  accountId: string,
  threadId: string,
  id: string,
  metadata: Record<string, string>,
): Promise<RunRow | undefined> {
  return executor
    .updateTable('runs')
    .set({ metadata: JSON.stringify(metadata) })
    .where('id', '=', id)
    .where('thread_id', '=', threadId)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirst();
}

/** queued → in_progress, unless a cancel was asked. Answers the Run as it is then. */
export async function markStarted(executor: Db, id: string): Promise<RunRow | undefined> {
  const started = await executor
    .updateTable('runs')
    .set({ status: 'in_progress', started_at: sql`now()` })
    .where('id', '=', id)
    .where('status', '=', 'queued')
    .where('cancel_requested_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  return started ?? loadRun(executor, id);
}

/** An active Run → cancelling, the request recorded; answers the Run, or undefined when it was not active. */
export async function markCancelling(executor: Db, id: string): Promise<RunRow | undefined> {
  return executor
    .updateTable('runs')
    .set({ status: 'cancelling', cancel_requested_at: sql`coalesce(cancel_requested_at, now())` })
    .where('id', '=', id)
    .where(ACTIVE)
    .returningAll()
    .executeTakeFirst();
}

/**
 * in_progress → requires_action after round `round` asked for tools: its calls join the transcript, its usage the
 * Run's, `expires_at` is set. Guarded by the round counter, so a repeat writes nothing.
 */
export async function markRequiresAction(
  executor: Db,
  update: { id: string; round: number; calls: RunRound; requiredAction: unknown; usage: RunUsage; timeoutMs: number },
): Promise<RunRow | undefined> {
  return executor
    .updateTable('runs')
    .set({
      status: 'requires_action',
      rounds: update.round + 1,
      transcript: sql`transcript || ${JSON.stringify([update.calls])}::jsonb`,
      required_action: JSON.stringify(update.requiredAction),
      usage: JSON.stringify(update.usage),
      expires_at: sql`now() + ${sql.lit(update.timeoutMs)} * interval '1 millisecond'`,
    })
    .where('id', '=', update.id)
    .where('status', '=', 'in_progress')
    .where('rounds', '=', update.round)
    .returningAll()
    .executeTakeFirst();
}

/**
 * The tokens of round `round` on a Run cancelled before its tool calls were stored (the round ends the Run, but
 * what the vendor reported is still paid for). Guarded by the round counter, like markRequiresAction.
 */
export async function markRoundBilled(
  executor: Db,
  update: { id: string; round: number; usage: RunUsage },
): Promise<RunRow | undefined> {
  return executor
    .updateTable('runs')
    .set({ rounds: update.round + 1, usage: JSON.stringify(update.usage) })
    .where('id', '=', update.id)
    .where('status', '=', 'cancelling')
    .where('rounds', '=', update.round)
    .returningAll()
    .executeTakeFirst();
}

/**
 * requires_action → in_progress with the outputs of the round the caller read (`rounds`), while it has not
 * expired by the database's clock at this moment. Expiry is a guarded write too (markExpired): under the row lock
 * exactly one of the two wins. Answers undefined when the Run is not waiting for these outputs.
 */
export async function storeToolOutputs(
  executor: Db,
  id: string,
  rounds: number,
  transcript: RunRound[],
): Promise<RunRow | undefined> {
  return executor
    .updateTable('runs')
    .set({ status: 'in_progress', required_action: NULL, transcript: JSON.stringify(transcript), expires_at: null })
    .where('id', '=', id)
    .where('status', '=', 'requires_action')
    .where('rounds', '=', rounds)
    .where('expires_at', '>', sql<Date>`clock_timestamp()`)
    .returningAll()
    .executeTakeFirst();
}

/** requires_action → expired once the wait of round `round` has run out (by the database's clock); see storeToolOutputs. */
export async function markExpired(executor: Db, id: string, round: number): Promise<boolean> {
  const expired = await executor
    .updateTable('runs')
    .set({
      status: 'expired',
      failed_at: sql`now()`,
      required_action: NULL,
      last_error: JSON.stringify({ code: 'run.expired', message: 'The tool outputs were not submitted in time.' }),
    })
    .where('id', '=', id)
    .where('status', '=', 'requires_action')
    .where('rounds', '=', round + 1)
    .where('expires_at', '<=', sql<Date>`clock_timestamp()`)
    .executeTakeFirst();
  return expired.numUpdatedRows > 0n;
}

/** Where a Run's wait for tool outputs stands: its status, its rounds, and the milliseconds left by the database's clock. */
export async function readWait(executor: Db, id: string) {
  return executor
    .selectFrom('runs')
    .select([
      'status',
      'rounds',
      sql<number | null>`extract(epoch from (expires_at - now())) * 1000`.as('remaining_ms'),
    ])
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * The final status and what comes with it (usage, error, the timestamp of that status), from any active status;
 * expired only from requires_action after its deadline; completed, incomplete and expired only without a cancel
 * request. Answers undefined when the Run was already final (or,
 * for expiry, was answered meanwhile): then nothing was written.
 */
export async function markFinal(
  executor: Db,
  update: {
    id: string;
    status: Extract<RunStatus, 'completed' | 'incomplete' | 'failed' | 'cancelled' | 'expired'>;
    rounds: number;
    usage: RunUsage | null;
    error: { code: string; message: string } | null;
  },
): Promise<RunRow | undefined> {
  const stamp = {
    completed: 'completed_at',
    incomplete: 'completed_at',
    failed: 'failed_at',
    cancelled: 'cancelled_at',
    expired: 'failed_at',
  } as const;
  let query = executor
    .updateTable('runs')
    .set({
      status: update.status,
      rounds: update.rounds,
      usage: JSON.stringify(update.usage),
      last_error: JSON.stringify(update.error),
      required_action: NULL,
      [stamp[update.status]]: sql`now()`,
    })
    .where('id', '=', update.id);
  if (update.status === 'expired')
    query = query.where('status', '=', 'requires_action').where('expires_at', '<=', sql<Date>`clock_timestamp()`);
  else query = query.where(ACTIVE);
  // Only a cancel ends a Run whose cancel was asked (the cancel endpoint already answered `cancelling`).
  if (update.status !== 'cancelled' && update.status !== 'failed')
    query = query.where('cancel_requested_at', 'is', null);
  return query.returningAll().executeTakeFirst();
}
