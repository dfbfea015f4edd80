import type { Db } from '../db/database';
import type { JobKind } from './jobs.table';

export interface JobRef {
  id: string;
  kind: JobKind;
}

/**
 * Runs one durable workflow per job (Response, Run, transcription). The job row is written in the caller's
 * transaction (an outbox), so a committed resource always gets its workflow: `launch` hands it over after
 * commit and a sweeper launches anything a crash left behind.
 */
export interface Engine {
  readonly name: 'embedded' | 'temporal';
  /** Embedded: the lease owner this process writes into `jobs.lease_owner`. */
  readonly workerId?: string;
  enqueue(trx: Db, job: JobRef): Promise<void>;
  launch(job: JobRef): Promise<void>;
  /** Delivers the `cancel` signal; the workflow decides what it means in its current state. */
  cancel(job: JobRef): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function insertJob(trx: Db, job: JobRef): Promise<void> {
  await trx.insertInto('jobs').values({ id: job.id, kind: job.kind }).onConflict((oc) => oc.column('id').doNothing()).execute();
}
