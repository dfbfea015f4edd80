import type { Db } from '../db/database';
import type { WakeSignal } from '../../workflows/definitions';
import type { JobRef } from './job-kind';

export type { JobRef };

/**
 * A slot an engine holds for a job about to be created, so the job row can be written already claimed by
 * this process (one statement less than inserting it pending and claiming it after). Exactly one of `run`
 * (the row committed with `claim`) or `release` (it was not written) must follow.
 */
export interface JobReservation {
  /** What makes the new `jobs` row claimed by this process: `running`, first attempt, leased to `owner` for `leaseMs` from the database's now. */
  readonly claim: { owner: string; leaseMs: number };
  run(job: JobRef): void;
  release(): void;
}

/**
 * Runs one durable workflow per job, of any kind in the registry (job-kinds.ts). The caller writes the job row (`jobs`,
 * an outbox) atomically with the resource, so a committed resource always gets its workflow: `launch` hands
 * it over after commit and a sweeper (Temporal) or the claim loop (embedded) picks up anything a crash left.
 */
export interface Engine {
  readonly name: 'embedded' | 'temporal';
  launch(job: JobRef): Promise<void>;
  /** A slot for a job this process will run itself at once, when the engine runs jobs in-process and has one free. */
  reserve?(): JobReservation | undefined;
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
