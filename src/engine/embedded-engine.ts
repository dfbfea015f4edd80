import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/database';
import { createGroupCommit } from '../db/group-commit';
import type { EventBus } from '../events/event-bus';
import type { Logger } from '../logger';
import type { FlowContext } from '../../workflows/flow-context';
import { RESPONSE_REPLAY_SAFE_ACTIVITIES, responseFlow } from '../../workflows/response.flow';
import type { Activities } from '../../activities';
import type { ActivityContext } from './activity-context';
import type { Engine, JobRef, JobReservation } from './engine';
import type { JobKind, JobRow } from './jobs.table';

const CANCEL_TOPIC = 'job-cancel';

export interface EmbeddedEngineOptions {
  db: Db;
  bus: EventBus;
  logger: Logger;
  activities: Activities;
  concurrency: number;
  /** Single-process storage (PGlite): every `running` job at start belongs to a dead process. */
  exclusiveStorage: boolean;
  leaseMs?: number;
  pollIntervalMs?: number;
  /** First retry delay of a failed job; doubles per attempt, capped at 30 s. */
  retryBaseMs?: number;
  /** How long a quick result's record waits for the flow's next replay-safe step (RECORD_DELAY_MS). */
  recordDelayMs?: number;
}

type Flow = (ctx: FlowContext<any>, input: { responseId: string }) => Promise<string>;
interface FlowDefinition {
  flow: Flow;
  input: (id: string) => { responseId: string };
  replaySafe: ReadonlyArray<string>;
  /** After the last attempt failed: end the resource cleanly so nothing waits on it forever. */
  abandon: (activities: Activities, id: string) => Promise<void>;
}
const flows: Record<JobKind, FlowDefinition> = {
  response: {
    flow: responseFlow,
    input: (id) => ({ responseId: id }),
    replaySafe: RESPONSE_REPLAY_SAFE_ACTIVITIES,
    abandon: async (activities, id) => {
      const outcome = { kind: 'failed', code: 'response.execution_failed', message: 'The Response could not be processed; retry the request.', inputTokens: 0, outputTokens: 0 } as const;
      const final = await activities.finalizeResponse({ responseId: id, outcome });
      if (final.webhook) await activities.sendWebhook({ responseId: id });
    },
  },
};

/**
 * Attempts of a job before it is abandoned: failed ones (a database error, say), and attempts that ended with
 * the process (a crash or an out-of-memory kill during the job), which count when the job is claimed again.
 */
const MAX_ATTEMPTS = 5;

/**
 * A non-replay-safe result (the vendor call) that took less than RECORD_AT_ONCE_AFTER_MS is recorded only if the
 * flow's next replay-safe step has not completed within RECORD_DELAY_MS; it usually has (a finalisation takes
 * milliseconds), and then the record, a second copy of the whole output, is never written. The price: a crash
 * in that window repeats a quick vendor call instead of replaying it. A longer call is recorded at once.
 */
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
  const retryDelayMs = (attempt: number) => Math.min(30_000, (options.retryBaseMs ?? 500) * 2 ** (attempt - 1));
  const owner = `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const running = new Map<string, AbortController>();
  // Slots promised to jobs being created by this process (see reserve), counted against the concurrency.
  let reserved = 0;
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
  const idle: Array<() => void> = [];

  const leaseFromNow = () => sql<Date>`now() + ${sql.lit(leaseMs)} * interval '1 millisecond'`;

  async function claim(limit: number): Promise<JobRow[]> {
    const leaseUntil = leaseFromNow();
    return db
      .updateTable('jobs')
      .set({ status: 'running', lease_owner: owner, lease_expires_at: leaseUntil, attempts: sql`attempts + 1`, updated_at: sql`now()` })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('jobs')
          .select('id')
          // A pending job's lease_expires_at, when set, is the time its retry may start.
          .where((w) =>
            w.or([
              w.and([w('status', '=', 'pending'), w.or([w('lease_expires_at', 'is', null), w('lease_expires_at', '<', sql<Date>`now()`)])]),
              w.and([w('status', '=', 'running'), w('lease_expires_at', '<', sql<Date>`now()`)]),
            ]),
          )
          .orderBy('created_at')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .returningAll()
      .execute();
  }

  async function claimPending(id: string): Promise<JobRow | undefined> {
    const leaseUntil = leaseFromNow();
    return db
      .updateTable('jobs')
      .set({ status: 'running', lease_owner: owner, lease_expires_at: leaseUntil, attempts: sql`attempts + 1`, updated_at: sql`now()` })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .returningAll()
      .executeTakeFirst();
  }

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
        if (jobs.length === wanted) backlog = pumpAgain = true;
        for (const job of jobs) void execute(job);
      } while (pumpAgain && !stopping);
    } catch (error) {
      if (!stopping) logger.error({ err: error }, 'job claim failed');
    } finally {
      pumping = false;
    }
  }

  /** What running a job needs of its row. */
  type RunnableJob = Pick<JobRow, 'id' | 'kind' | 'attempts' | 'cancel_requested_at'>;

  async function execute(job: RunnableJob): Promise<void> {
    const controller = new AbortController();
    running.set(job.id, controller);
    try {
      if (job.attempts > MAX_ATTEMPTS) {
        // Its earlier attempts ended with the process, not with an error (the job never reached the catch
        // below): one that kills the process would otherwise do so at every start, for every account.
        throw new Error(`${MAX_ATTEMPTS} attempts of this job ended with the process that ran it; it is not run again.`);
      }
      if (job.cancel_requested_at) controller.abort();
      const definition = flows[job.kind];
      // Only a re-run (attempt > 1) can have recorded steps.
      const steps = job.attempts > 1 ? await db.selectFrom('job_steps').select(['step', 'activity', 'result']).where('job_id', '=', job.id).execute() : [];
      const recorded = new Map(steps.map((row) => [row.step, row]));
      let step = 0;
      const recording: Promise<void>[] = [];
      // Records of quick results wait a little: when the flow's next replay-safe step completes first, it has
      // stored what a re-run needs and the record is dropped (see RECORD_DELAY_MS).
      let deferred: { timer: NodeJS.Timeout; write: () => void }[] = [];
      const dropDeferred = () => {
        for (const record of deferred) clearTimeout(record.timer);
        deferred = [];
      };
      const writeDeferred = () => {
        for (const record of deferred) record.write();
        dropDeferred();
      };
      const never = new AbortController().signal;
      let shielded = 0;
      const proxy = new Proxy({} as Activities, {
        get: (_target, name: string) => async (input: unknown) => {
          const index = step++;
          // A re-run can take another path (a cancel recorded meanwhile skips startResponse), shifting the
          // step numbers: a recorded result counts only for the activity that produced it.
          const saved = recorded.get(index);
          if (saved?.activity === name) return saved.result;
          const activity = (activities as unknown as Record<string, (input: unknown, context: ActivityContext) => Promise<unknown>>)[name];
          const signal = shielded > 0 ? never : controller.signal;
          const startedAt = performance.now();
          const result = await activity(input, { signal, heartbeat: () => undefined, attempt: job.attempts });
          if (definition.replaySafe.includes(name)) {
            dropDeferred();
            return result;
          }
          // Recorded while the flow goes on: the record matters only if this process dies before the flow's
          // next (replay-safe) step has stored the result itself, and a crash before the record commits is no
          // different from a crash during the activity. The job completes only after its records.
          const write = () => void recording.push(recordStep({ job_id: job.id, step: index, activity: name, result: result ?? null }));
          if (performance.now() - startedAt >= RECORD_AT_ONCE_AFTER_MS) {
            write();
          } else {
            const record = {
              timer: setTimeout(() => {
                deferred = deferred.filter((other) => other !== record);
                write();
              }, options.recordDelayMs ?? RECORD_DELAY_MS),
              write,
            };
            deferred.push(record);
          }
          return result;
        },
      });
      const context: FlowContext<Activities> = {
        activities: proxy,
        cancellable: (fn) => fn(),
        nonCancellable: async (fn) => {
          shielded++;
          try {
            return await fn();
          } finally {
            shielded--;
          }
        },
        isCancellation: (error) => (error as Error)?.name === 'AbortError' || controller.signal.aborted,
        cancelRequested: () => controller.signal.aborted,
        setStatus: () => undefined,
      };
      // Every record is awaited, even when the flow fails, so none is left rejecting unobserved. A failed flow
      // runs again later: what it deferred is written now, for that run to replay.
      const outcome = await definition.flow(context, definition.input(job.id)).then(
        () => ({ failed: false as const }),
        (error: unknown) => ({ failed: true as const, error }),
      );
      if (outcome.failed) writeDeferred();
      else dropDeferred();
      await Promise.all(recording);
      if (outcome.failed) throw outcome.error;
      await finish(job.id, 'completed', null);
    } catch (error) {
      if (stopping) return; // lease expires; another start picks the job up
      const message = error instanceof Error ? error.message : String(error);
      if (job.attempts < MAX_ATTEMPTS) {
        logger.warn({ err: error, jobId: job.id, attempt: job.attempts }, 'job attempt failed; retrying');
        await retryLater(job, message).catch((failure) => logger.error({ err: failure, jobId: job.id }, 'job retry could not be scheduled'));
      } else {
        logger.error({ err: error, jobId: job.id, attempt: job.attempts }, 'job failed; abandoning');
        await flows[job.kind].abandon(activities, job.id).catch((failure) => logger.error({ err: failure, jobId: job.id }, 'job could not be abandoned cleanly'));
        await finish(job.id, 'failed', message).catch(() => undefined);
      }
    } finally {
      running.delete(job.id);
      if (running.size === 0) idle.splice(0).forEach((resolve) => resolve());
      void pump();
    }
  }

  // Step records and job completions of concurrent jobs are group-committed (db/group-commit.ts).
  // Batches travel as one jsonb parameter, so each statement has one text whatever the batch size (parsed and
  // planned once per connection as a prepared statement, see db/prepared-statements.ts).
  const recordStep = createGroupCommit<{ job_id: string; step: number; activity: string; result: unknown }, void>({
    maxBatch: 200,
    write: async (rows) => {
      await sql`
        insert into job_steps (job_id, step, activity, result)
        select job_id, step, activity, result
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as recorded (job_id text, step integer, activity text, result jsonb)
        on conflict (job_id, step) do nothing`.execute(db);
      return rows.map(() => undefined);
    },
  });

  const finishJobs = createGroupCommit<{ id: string; status: 'completed' | 'failed'; last_error: string | null }, void>({
    maxBatch: 200,
    write: async (jobs) => {
      await sql`
        update jobs set status = finished.status, last_error = finished.last_error, finished_at = now(), updated_at = now(),
          lease_owner = null, lease_expires_at = null
        from jsonb_to_recordset(${JSON.stringify(jobs)}::jsonb) as finished (id text, status text, last_error text)
        where jobs.id = finished.id and jobs.lease_owner = ${owner}`.execute(db);
      return jobs.map(() => undefined);
    },
  });

  const finish = (id: string, status: 'completed' | 'failed', lastError: string | null) => finishJobs({ id, status, last_error: lastError });

  /** Back to pending, claimable again after an exponential delay; recorded steps are kept. */
  async function retryLater(job: RunnableJob, lastError: string) {
    const delay = retryDelayMs(job.attempts);
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

  return {
    name: 'embedded',
    workerId: owner,
    async launch() {
      backlog = true;
      void pump();
    },
    reserve(): JobReservation | undefined {
      if (!started || stopping || running.size + reserved >= options.concurrency) return undefined;
      reserved++;
      let settled = false;
      const settle = () => {
        if (settled) throw new Error('job reservation used twice');
        settled = true;
        reserved--;
      };
      return {
        claim: { status: 'running', lease_owner: owner, lease_expires_at: leaseFromNow(), attempts: 1 },
        run(job) {
          settle();
          if (stopping) return; // its lease expires; the next start (or another replica) resumes it
          // The row was written claimed by this process, first attempt, no cancel yet (a cancel can only
          // name it after creation returns; it then finds it running here).
          void execute({ ...job, attempts: 1, cancel_requested_at: null });
        },
        release() {
          settle();
          void pump();
        },
      };
    },
    async cancel(job) {
      await db.updateTable('jobs').set({ cancel_requested_at: sql`coalesce(cancel_requested_at, now())` }).where('id', '=', job.id).execute();
      const local = running.get(job.id);
      if (local) return local.abort();
      // Still waiting for a free slot: run its short cancelled path now (start is skipped, finalisation
      // writes `cancelled`) instead of letting the cancel wait until some other job ends.
      const waiting = started && !stopping ? await claimPending(job.id) : undefined;
      if (waiting) void execute(waiting);
      else await bus.publish({ topic: CANCEL_TOPIC, id: job.id });
    },
    async start() {
      if (started) return;
      started = true;
      if (options.exclusiveStorage) {
        await db.updateTable('jobs').set({ status: 'pending', lease_owner: null, lease_expires_at: null }).where('status', '=', 'running').execute();
      }
      unsubscribeCancel = bus.subscribeAll(CANCEL_TOPIC, (message) => running.get(message.id)?.abort());
      pollTimer = setInterval(() => {
        backlog = true;
        void pump();
      }, pollIntervalMs);
      leaseTimer = setInterval(() => void renewLeases().catch((error) => logger.warn({ err: error }, 'lease renewal failed')), Math.max(1000, leaseMs / 3));
      await pump();
    },
    async stop() {
      if (!started) return;
      stopping = true;
      clearInterval(pollTimer);
      clearInterval(leaseTimer);
      unsubscribeCancel?.();
      // Running jobs are abandoned, not failed: their lease lets the next start resume them.
      if (running.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([new Promise<void>((resolve) => idle.push(resolve)), new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
        clearTimeout(timer);
      }
    },
  };
}

export type { JobRef };
