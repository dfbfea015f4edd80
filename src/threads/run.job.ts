import { sql } from 'kysely';
import type { Db } from '../db/database';
import { DEFAULT_JOB_RETRY, type JobKindDefinition } from '../engine/job-kind';
import { runFlowDefinition, type RunActivities, type RunJobInput } from '../../workflows/run.flow';
import { createRunActivities, type RunActivityDeps } from './run.activities';
import { FINAL_RUN_STATUSES } from './runs.table';

declare module '../engine/job-kind' {
  interface JobKinds {
    run: RunJobInput;
  }
}

/** A legacy Run's durable job: one workflow per Run (workflows/run.flow.ts). */
export const runJob: JobKindDefinition<RunJobInput, RunActivities, RunActivityDeps, Db> = {
  flow: runFlowDefinition,
  activities: createRunActivities,
  retry: DEFAULT_JOB_RETRY,
  resource: { table: 'runs', finalStatuses: FINAL_RUN_STATUSES },
  labels: (db, runId) =>
    db
      .selectFrom('runs')
      .select(['account_id as accountId', 'model', 'vendor', sql<boolean>`true`.as('background'), 'status'])
      .where('id', '=', runId)
      .executeTakeFirst(),
};
