import type { JobKind } from './jobs.table';

export interface JobRef {
  id: string;
  kind: JobKind;
}

/**
 * Runs one durable workflow per job (Response, Run, transcription). The caller writes the job row (`jobs`,
 * an outbox) atomically with the resource, so a committed resource always gets its workflow: `launch` hands
 * it over after commit and a sweeper (Temporal) or the claim loop (embedded) picks up anything a crash left.
 */
export interface Engine {
  readonly name: 'embedded' | 'temporal';
  /** Embedded: the lease owner this process writes into `jobs.lease_owner`. */
  readonly workerId?: string;
  launch(job: JobRef): Promise<void>;
  /** Delivers the `cancel` signal; the workflow decides what it means in its current state. */
  cancel(job: JobRef): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}
