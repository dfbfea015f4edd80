import { sql } from 'kysely';
import type { Db } from '../db/database';
import { createGroupCommit } from '../db/group-commit';
import type { Metrics } from '../metrics/metrics';
import type { EventBus } from '../events/event-bus';
import type { Logger } from '../logger';
import type { FlowContext } from '../../workflows/flow-context';
import { admitJob, type JobSlot } from './admission';
import type { Engine, JobRef } from './engine';
import type { JobHandoff } from './job-handoff';
import { JOB_KINDS, jobKindOf, stepPolicies } from './job-kinds';
import type { JobRow } from './jobs.table';
import { claimJobs, claimPendingJob, releaseClaims } from './jobs.repository';
import { holdLivenessLock, newOwnerName, type LivenessLock } from './liveness';
import { createStepRecorder, type RecordedStep } from './step-recorder';
import { waitAtMost } from '../time';

const CANCEL_TOPIC = 'job-cancel';

export interface EmbeddedEngineOptions {
  db: Db;
  bus: EventBus;
  logger: Logger;
  /** Every activity of every job kind, by durable name. */
  activities: object;
  /** Shared with the activities: what a creation hands to the first step of a job it runs here at once. */
  handoff?: JobHandoff;
  concurrency: number;
  /** Jobs of one account run at once, at most (api-decisions 36); the whole concurrency when unset. */
  perAccountConcurrency?: number;
  /** Single-process storage (PGlite): every `running` job at start belongs to a dead process. */
  exclusiveStorage: boolean;
  leaseMs?: number;
  pollIntervalMs?: number;
  /** First retry delay of a failed job, instead of its kind's (tests); doubles per attempt up to the kind's cap. */
  retryBaseMs?: number;
  /** How long a quick result's record waits for the flow's next rerun step (step-recorder.ts). */
  recordDelayMs?: number;
  /** The process's owner name (liveness.ts newOwnerName), shared with what else it owns (billing holds). */
  owner?: string;
  metrics?: Metrics;
  /** Postgres: hold a liveness lock (liveness.ts), so the jobs of a dead process are taken over at once, not after their leases. */
  liveness?: { connectionString: string };
}

/** A quick result's record waits this long for the flow's next rerun step (see step-recorder.ts). */
const RECORD_AT_ONCE_AFTER_MS = 1000;
const RECORD_DELAY_MS = 250;

/**
 * The in-process engine: the same flows and activities as Temporal, made durable by the jobs table.
 * Jobs are claimed with FOR UPDATE SKIP LOCKED under a lease that running jobs renew; an expired lease
 * (crashed process) makes the job claimable again. Each activity result is recorded in job_steps, so a
 * re-run replays finished steps instead of repeating them — the role Temporal's history plays.
 */
export function createEmbeddedEngine(options: EmbeddedEngineOptions): Engine {
  const { db, bus, logger, activities } = options;
  const leaseMs = options.leaseMs ?? 30_000;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const owner = options.owner ?? newOwnerName();
  const running = new Map<string, AbortController>();
  // Slots promised to jobs being created by this process (takeSlot), counted against the concurrency.
  let reserved = 0;
  // Jobs running or promised a slot here, by account ('' for jobs written without one): each account's share
  // (api-decisions 36).
  const perAccount = options.perAccountConcurrency ?? options.concurrency;
  const byAccount = new Map<string, number>();
  const take = (account: string) => byAccount.set(account, (byAccount.get(account) ?? 0) + 1);
  const giveBack = (account: string) => {
    const left = byAccount.get(account)! - 1;
    if (left === 0) byAccount.delete(account);
    else byAccount.set(account, left);
  };
  let started = false;
  let stopping = false;
  let pumping = false;
  let pumpAgain = false;
  // Whether claimable jobs may exist: set by launches and the poll tick, cleared by a claim that came up
  // short, so a finished job does not cost an empty claim query.
  let backlog = true;
  let pollTimer: NodeJS.Timeout | undefined;
  let leaseTimer: NodeJS.Timeout | undefined;
  let unsubscribeCancel: (() => void) | undefined;
  let livenessSession: LivenessLock | undefined;
  const idle: Array<() => void> = [];
  // The final stop fences the jobs still running here (handed over at a drain's end, or left by a close): their
  // activities are stopped and their flows get no further step, so nothing they do reaches a database closed under
  // them. Closed under a running job, its database once made an asynchronous transcription's read of its upload fail,
  // which the activity took for its vendor's failure: recorded, the next process replayed it and the job ended failed.
  let fenced = false;
  let activeSteps = 0;
  const stepsSettled: Array<() => void> = [];
  const stepActivities = new Proxy(activities as Record<string, (input: unknown, context: unknown) => unknown>, {
    get:
      (target, name: string) =>
      async (input: unknown, context: unknown): Promise<unknown> => {
        if (fenced) return new Promise<never>(() => undefined);
        activeSteps++;
        try {
          return await target[name]!(input, context);
        } finally {
          if (--activeSteps === 0) stepsSettled.splice(0).forEach((resolve) => resolve());
        }
      },
  });

  const leaseFromNow = () => sql<Date>`now() + ${sql.lit(leaseMs)} * interval '1 millisecond'`;

  const claims = { owner, kinds: JOB_KINDS, leaseUntil: leaseFromNow };
  const claim = (limit: number) =>
    claimJobs(db, {
      ...claims,
      limit,
      takeOverDead: livenessSession !== undefined,
      share: { max: perAccount, running: byAccount },
    });
  const claimPending = (id: string) => claimPendingJob(db, { ...claims, id });

  async function pump(): Promise<void> {
    if (!started || stopping) return;
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        const free = options.concurrency - running.size - reserved;
        if (free <= 0 || !backlog) break;
        const wanted = Math.min(free, 64);
        backlog = false;
        const jobs = await claim(wanted);
        // A claim that was in flight when the engine began to stop: none of it runs here (a drain claims nothing new).
        if (stopping) {
          await releaseClaims(
            db,
            owner,
            jobs.map((job) => job.id),
          );
          break;
        }
        if (jobs.length === wanted) backlog = pumpAgain = true;
        recordClaims(jobs);
        for (const job of jobs) {
          // Its own job, whose lease ran out while it still runs here (a renewal late behind a stalled event loop):
          // the claim renewed the lease, and the job goes on in the execution it has. A second one would be a second
          // attempt at once, writing the same events ('its event stream could not be stored').
          if (running.has(job.id)) continue;
          void execute(job);
        }
      } while (pumpAgain && !stopping);
    } catch (error) {
      if (!stopping) logger.error({ err: error }, 'job claim failed');
    } finally {
      pumping = false;
    }
  }

  /** Claim lag of first claims; later claims (a retry, the end of a sleep, a takeover) counted as reclaims. */
  function recordClaims(jobs: JobRow[]) {
    if (!options.metrics) return;
    const now = Date.now();
    for (const job of jobs) {
      if (job.attempts <= 1 && job.suspensions === 0)
        options.metrics.engineClaimLag.observe({ kind: job.kind }, Math.max(0, now - job.created_at.getTime()) / 1000);
      else options.metrics.engineReclaimed.inc({ kind: job.kind });
    }
  }

  /** What running a job needs of its row. */
  type RunnableJob = Pick<
    JobRow,
    'id' | 'kind' | 'account_id' | 'attempts' | 'suspensions' | 'wakes' | 'cancel_requested_at'
  >;

  /** Runs a claimed job; `counted`: its account's share already counts it (a reservation). */
  async function execute(job: RunnableJob, counted = false): Promise<void> {
    const controller = new AbortController();
    running.set(job.id, controller);
    const account = job.account_id ?? '';
    if (!counted) take(account);
    const definition = jobKindOf(job.kind);
    const { flow } = definition;
    const { maxAttempts } = definition.retry;
    // Claims after a suspension (a sleep) are not attempts.
    const attempt = job.attempts - job.suspensions;
    try {
      if (attempt > maxAttempts) {
        // Its earlier attempts ended with the process, not with an error (the job never reached the catch
        // below): one that kills the process would otherwise do so at every start, for every account.
        throw new Error(`${maxAttempts} attempts of this job ended with the process that ran it; it is not run again.`);
      }
      if (job.cancel_requested_at) controller.abort();
      // Only a re-run (a second claim) can have recorded steps.
      const steps =
        job.attempts > 1
          ? await db
              .selectFrom('job_steps')
              .select(['step', 'activity', 'result'])
              .where('job_id', '=', job.id)
              .execute()
          : [];
      const never = new AbortController().signal;
      let shielded = 0;
      const recorder = createStepRecorder({
        jobId: job.id,
        attempt,
        activities: stepActivities,
        steps: stepPolicies(job.kind),
        recorded: new Map(steps.map((row) => [row.step, row])),
        signal: () => (shielded > 0 ? never : controller.signal),
        write: recordStep,
        recordAtOnceAfterMs: RECORD_AT_ONCE_AFTER_MS,
        recordDelayMs: options.recordDelayMs ?? RECORD_DELAY_MS,
      });
      const context: FlowContext<object> = {
        activities: recorder.activities,
        cancellable: (fn) => fn(),
        nonCancellable: async (fn) => {
          shielded++;
          try {
            return await fn();
          } finally {
            shielded--;
          }
        },
        // In process, nothing waits for a slot (this job has one): the step runs to its end, as a shielded one.
        abandonable: (fn) => context.nonCancellable(fn),
        isCancellation: (error) => (error as Error)?.name === 'AbortError' || controller.signal.aborted,
        cancelRequested: () => controller.signal.aborted,
        patched: () => true,
        setStatus: () => undefined,
        // The job is suspended (it holds no slot) until the deadline or a signal, then runs again from its start.
        sleep: async (milliseconds) => {
          if (controller.signal.aborted || milliseconds <= 0) return;
          throw new JobSuspended(milliseconds);
        },
      };
      const outcome = await flow.run(context, flow.input(job.id)).then(
        () => ({ failed: false as const }),
        (error: unknown) => ({ failed: true as const, error }),
      );
      await recorder.settle(outcome.failed);
      if (outcome.failed && outcome.error instanceof JobSuspended)
        return await suspend(job, outcome.error.milliseconds);
      if (outcome.failed) throw outcome.error;
      await finish(job.id, 'completed', null);
    } catch (error) {
      if (stopping) return; // lease expires; another start picks the job up
      const message = error instanceof Error ? error.message : String(error);
      if (attempt < maxAttempts) {
        logger.warn({ err: error, jobId: job.id, attempt }, 'job attempt failed; retrying');
        await retryLater(job, message).catch((failure) =>
          logger.error({ err: failure, jobId: job.id }, 'job retry could not be scheduled'),
        );
      } else {
        logger.error({ err: error, jobId: job.id, attempt }, 'job failed; abandoning');
        options.metrics?.engineAbandoned.inc({ kind: job.kind });
        await flow
          .abandon(activities, flow.input(job.id))
          .catch((failure) => logger.error({ err: failure, jobId: job.id }, 'job could not be abandoned cleanly'));
        await finish(job.id, 'failed', message).catch(() => undefined);
      }
    } finally {
      running.delete(job.id);
      // An account at its share may have jobs its claims left waiting: claim again.
      if ((byAccount.get(account) ?? 0) >= perAccount) backlog = true;
      giveBack(account);
      if (running.size === 0 && stopping) clearInterval(leaseTimer);
      if (running.size === 0) idle.splice(0).forEach((resolve) => resolve());
      void pump();
    }
  }

  // Step records and job completions of concurrent jobs are group-committed (db/group-commit.ts).
  // Batches travel as one jsonb parameter, so each statement has one text whatever the batch size (parsed and
  // planned once per connection as a prepared statement, see db/prepared-statements.ts).
  const recordStep = createGroupCommit<RecordedStep, void>({
    maxBatch: 200,
    onBatch: (size) => options.metrics?.groupCommitBatch.observe({ writer: 'job_steps' }, size),
    write: async (rows) => {
      await sql`
        insert into job_steps (job_id, step, activity, result)
        select job_id, step, activity, result
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as recorded (job_id text, step integer, activity text, result jsonb)
        on conflict (job_id, step) do nothing`.execute(db);
      return rows.map(() => undefined);
    },
  });

  const finishJobs = createGroupCommit<{ id: string; status: 'completed' | 'failed'; last_error: string | null }, void>(
    {
      maxBatch: 200,
      onBatch: (size) => options.metrics?.groupCommitBatch.observe({ writer: 'job_finishes' }, size),
      write: async (jobs) => {
        await sql`
        update jobs set status = finished.status, last_error = finished.last_error, finished_at = now(), updated_at = now(),
          lease_owner = null, lease_expires_at = null
        from jsonb_to_recordset(${JSON.stringify(jobs)}::jsonb) as finished (id text, status text, last_error text)
        where jobs.id = finished.id and jobs.lease_owner = ${owner}
          -- The ids again as an array: an index condition for the planner, which otherwise guesses the recordset
          -- at 100 rows and may scan the whole table (and keep that plan as the prepared statement's).
          and jobs.id = any(${jobs.map((job) => job.id)}::text[])`.execute(db);
        return jobs.map(() => undefined);
      },
    },
  );

  const finish = (id: string, status: 'completed' | 'failed', lastError: string | null) =>
    finishJobs({ id, status, last_error: lastError });

  /** Back to pending, claimable again after an exponential delay; recorded steps are kept. */
  async function retryLater(job: RunnableJob, lastError: string) {
    const { initialDelayMs, maxDelayMs } = jobKindOf(job.kind).retry;
    const delay = Math.min(
      maxDelayMs,
      (options.retryBaseMs ?? initialDelayMs) * 2 ** (job.attempts - job.suspensions - 1),
    );
    await db
      .updateTable('jobs')
      .set({
        status: 'pending',
        last_error: lastError,
        lease_owner: null,
        lease_expires_at: sql<Date>`now() + ${sql.lit(delay)} * interval '1 millisecond'`,
        updated_at: sql`now()`,
      })
      .where('id', '=', job.id)
      .where('lease_owner', '=', owner)
      .execute();
    setTimeout(() => {
      backlog = true;
      void pump();
    }, delay + 10).unref();
  }

  /**
   * Back to pending for `milliseconds` (a sleep, timed by the database's clock), or claimable at once when a
   * signal arrived since this claim (`wakes` grew: the signal found the job running, so it could not end a
   * suspension itself) or a cancel was asked meanwhile.
   */
  async function suspend(job: RunnableJob, milliseconds: number) {
    const row = await db
      .updateTable('jobs')
      .set({
        status: 'pending',
        lease_owner: null,
        suspensions: sql`suspensions + 1`,
        lease_expires_at: sql<Date>`case when wakes > ${job.wakes} or cancel_requested_at is not null then now()
          else now() + ${Math.ceil(milliseconds)} * interval '1 millisecond' end`,
        updated_at: sql`now()`,
      })
      .where('id', '=', job.id)
      .where('lease_owner', '=', owner)
      .returning(sql<boolean>`wakes > ${job.wakes} or cancel_requested_at is not null`.as('woken'))
      .executeTakeFirst();
    // Otherwise the poll tick claims it once its time has passed.
    if (row?.woken) {
      backlog = true;
      void pump();
    }
  }

  async function renewLeases() {
    if (running.size === 0) return;
    const rows = await db
      .updateTable('jobs')
      .set({ lease_expires_at: leaseFromNow(), updated_at: sql`now()` })
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .returning(['id', 'cancel_requested_at'])
      .execute();
    for (const row of rows) if (row.cancel_requested_at) running.get(row.id)?.abort();
  }

  async function launch() {
    backlog = true;
    void pump();
  }

  /**
   * A slot for a job this process is creating, when one is free: its row is written claimed by this process, which
   * runs it as soon as it is committed (one statement less than writing it pending and claiming it after).
   */
  function takeSlot(accountId: string): JobSlot | undefined {
    if (!started || stopping || running.size + reserved >= options.concurrency) return undefined;
    // An account at its share waits for a claim, which takes accounts in turn (api-decisions 36).
    if ((byAccount.get(accountId) ?? 0) >= perAccount) return undefined;
    reserved++;
    take(accountId);
    let settled = false;
    const settle = () => {
      if (settled) throw new Error('job slot used twice');
      settled = true;
      reserved--;
    };
    return {
      claim: { owner, leaseMs },
      run(job, handed) {
        settle();
        if (stopping) return giveBack(accountId); // its lease expires; the next start (or another replica) resumes it
        if (handed !== undefined) options.handoff?.put(job.id, handed);
        // The row was written claimed by this process, first attempt, no cancel yet (a cancel can only
        // name it after creation returns; it then finds it running here).
        void execute(
          { ...job, account_id: accountId, attempts: 1, suspensions: 0, wakes: 0, cancel_requested_at: null },
          true,
        );
      },
      release() {
        settle();
        giveBack(accountId);
        void pump();
      },
    };
  }

  /** Stops the jobs still running here for good (see `fenced`); resolves once their steps ended, or after FENCE_WAIT_MS. */
  async function fenceRunning(): Promise<void> {
    if (running.size === 0) return;
    fenced = true;
    for (const controller of running.values()) controller.abort();
    if (activeSteps > 0) await waitAtMost(FENCE_WAIT_MS, (resolve) => stepsSettled.push(resolve));
  }

  return {
    name: 'embedded',
    launch,
    admit: (job, write) => admitJob(job.kind, write, takeSlot(job.accountId), launch),
    async cancel(job) {
      // A suspended job (pending until its sleep ends) becomes claimable at once, by this process or another.
      await db
        .updateTable('jobs')
        .set({
          cancel_requested_at: sql`coalesce(cancel_requested_at, now())`,
          lease_expires_at: sql`case when status = 'pending' then now() else lease_expires_at end`,
        })
        .where('id', '=', job.id)
        .execute();
      const local = running.get(job.id);
      if (local) return local.abort();
      // Still waiting for a free slot: run its short cancelled path now (start is skipped, finalisation
      // writes `cancelled`) instead of letting the cancel wait until some other job ends.
      const waiting = started && !stopping ? await claimPending(job.id) : undefined;
      if (waiting && stopping) await releaseClaims(db, owner, [waiting.id]);
      else if (waiting) void execute(waiting);
      else await bus.publish({ topic: CANCEL_TOPIC, id: job.id });
    },
    async signal(job, _name, signalOptions) {
      // Ends a suspension now; a job running now sees the count grow when it suspends.
      await (signalOptions?.within ?? db)
        .updateTable('jobs')
        .set({
          wakes: sql`wakes + 1`,
          lease_expires_at: sql`case when status = 'pending' then now() else lease_expires_at end`,
        })
        .where('id', '=', job.id)
        .execute();
      if (signalOptions?.within) return; // claimable once committed: the caller's second call (or the poll) claims it
      backlog = true;
      void pump();
    },
    async start() {
      if (started) return;
      // Held before any claim: a process that claims jobs is one whose death others can see.
      if (options.liveness)
        livenessSession = await holdLivenessLock(options.liveness.connectionString, owner, logger, () => stopping);
      started = true;
      if (options.exclusiveStorage) {
        await db
          .updateTable('jobs')
          .set({ status: 'pending', lease_owner: null, lease_expires_at: null })
          .where('status', '=', 'running')
          .execute();
      }
      unsubscribeCancel = bus.subscribeAll(CANCEL_TOPIC, (message) => running.get(message.id)?.abort());
      pollTimer = setInterval(() => {
        backlog = true;
        void pump();
      }, pollIntervalMs);
      leaseTimer = setInterval(
        () => void renewLeases().catch((error) => logger.warn({ err: error }, 'lease renewal failed')),
        Math.max(1000, leaseMs / 3),
      );
      await pump();
    },
    async stop(stopOptions) {
      if (!started) return { handedOver: 0 };
      if (stopping) {
        // A second call (the close after a drain): already waited.
        await fenceRunning();
        return { handedOver: running.size };
      }
      stopping = true;
      clearInterval(pollTimer);
      // Leases are renewed for as long as a job runs here, through the grace and after the hand-over until the process
      // exits (they stop with the last job, below): a lease left to expire while its job still ran (the grace is 60 s,
      // a lease 30 s; a process outlives its hand-over by the close of its connections) let another replica claim it,
      // and the two attempts' events collided: the Response ended failed, 'its event stream could not be stored'.
      if (running.size === 0) clearInterval(leaseTimer);
      unsubscribeCancel?.();
      // Running jobs are abandoned, not failed: their lease lets the next start resume them.
      if (running.size > 0) await waitAtMost(stopOptions?.graceMs ?? 2000, (resolve) => idle.push(resolve));
      // Jobs still running here are left to their leases: the session (and the lock) ends with the process, so
      // they are not taken over while they still run.
      if (running.size === 0) await livenessSession?.end().catch(() => undefined);
      // A hand-over is not an attempt that ended with its process (those are limited, so that a job that kills every
      // process running it stops): counted as a suspension, as a sleep's claim is, it leaves the job's attempts to
      // crashes and failures, however many deploys a long job runs through.
      else
        await db
          .updateTable('jobs')
          .set({ suspensions: sql<number>`suspensions + 1` })
          .where('id', 'in', [...running.keys()])
          .where('lease_owner', '=', owner)
          .execute()
          .catch((error) => logger.warn({ err: error }, 'recording the hand-over of running jobs failed'));
      // A close without a drain is the final stop too.
      if (stopOptions?.graceMs === undefined) await fenceRunning();
      return { handedOver: running.size };
    },
  };
}

export type { JobRef };

/** How long the final stop waits for the steps of fenced jobs to end (their activities stop at their abort). */
const FENCE_WAIT_MS = 5000;

/** Thrown through a flow by sleep in the embedded engine: the job is suspended, not failed. */
class JobSuspended extends Error {
  constructor(readonly milliseconds: number) {
    super('The job is suspended until a signal or its deadline.');
    this.name = 'JobSuspended';
  }
}
