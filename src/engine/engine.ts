import type { Db } from '../db/database';
import type { WakeSignal } from '../../workflows/definitions';
import type { JobKind, JobRef } from './job-kind';
import type { Admitted, JobAdmission } from './admission';

export type { Admitted, JobAdmission, JobRef };

/**
 * Runs one durable workflow per job, of any kind in the registry (job-kinds.ts). A slice creates a job through
 * `admit`, which owns everything about it but the resource: the job row (an outbox written with the resource, so a
 * committed resource always gets its workflow), the slot this process may run it in, the hand-off of the first
 * step's rows and the launch; a sweeper (Temporal) or the claim loop (embedded) picks up anything a crash left.
 */
export interface Engine {
  readonly name: 'embedded' | 'temporal';
  /**
   * Creates a job of an account (it takes the account's share of this process's slots, api-decisions 36): `write`
   * writes the resource with `admission`'s outbox row (in one statement or transaction) and answers the resource's
   * id, or no id when it wrote nothing (a refused hold, an Idempotency-Key another request won). The job then
   * starts: at once in this process when a slot was free, else launched. If `write` throws, nothing of the job
   * remains. Answers `write`'s result.
   */
  admit<Result>(
    job: { kind: JobKind; accountId: string },
    write: (admission: JobAdmission) => Promise<Admitted<Result>>,
  ): Promise<Result>;
  /** Starts (again) the job of a row already written: a repeated launch is a no-op. */
  launch(job: JobRef): Promise<void>;
  /** Delivers the `cancel` signal; the workflow decides what it means in its current state. */
  cancel(job: JobRef): Promise<void>;
  /**
   * Wakes a workflow waiting in `sleep` on `signal` (a shared definition, workflows/definitions.ts; after the caller has stored what the signal
   * means). A workflow not waiting on it notices at its next wait; one not running yet runs when its turn comes.
   * `within` a caller's transaction, only what the engine keeps in the database (the embedded engine's wake) is
   * written there, so a crash before the commit's delivery cannot lose it; call again after the commit to deliver.
   */
  signal(job: JobRef, signal: WakeSignal, options?: { within?: Db }): Promise<void>;
  start(): Promise<void>;
  /**
   * Stops claiming jobs; waits up to `graceMs` (default 2 s) for the ones running here, then leaves the rest to the
   * next process, which resumes them (their leases end with this process). Answers how many were left.
   * Temporal: nothing runs in the API process (a worker's grace is WORKER_SHUTDOWN_GRACE_MS).
   */
  stop(options?: { graceMs?: number }): Promise<{ handedOver: number }>;
}
