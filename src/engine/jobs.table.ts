import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, JsonDefault, NullableTimestamp } from '../db/columns';
import type { JobKind } from './job-kind';
export type JobStatus = 'pending' | 'running' | 'completed' | 'failed';

/** Durable job table of the embedded engine; for the Temporal engine it is the start outbox. */
export interface JobsTable {
  id: string;
  kind: JobKind;
  /** The account the job works for (claims take accounts in turn); null on jobs written before it was recorded. */
  account_id: string | null;
  status: ColumnType<JobStatus, JobStatus | undefined, JobStatus>;
  attempts: ColumnType<number, number | undefined, number>;
  lease_owner: string | null;
  lease_expires_at: NullableTimestamp;
  launched_at: NullableTimestamp;
  cancel_requested_at: NullableTimestamp;
  /** Times the job was suspended in `sleep` (claims that were not attempts). */
  suspensions: ColumnType<number, number | undefined, number>;
  /** Signals sent to the job (engine.signal): one that arrives while it runs makes its suspension end at once. */
  wakes: ColumnType<number, number | undefined, number>;
  last_error: string | null;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  finished_at: NullableTimestamp;
}

/** Recorded activity results of an embedded job: a re-run after a crash replays them instead of re-executing. */
export interface JobStepsTable {
  job_id: string;
  step: number;
  activity: string;
  result: JsonDefault<unknown>;
  created_at: CreatedAt;
}

export type JobRow = Selectable<JobsTable>;
