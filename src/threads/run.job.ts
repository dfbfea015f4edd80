import type { Db } from '../db/database';
import { FINAL_RUN_STATUSES } from './runs.table';
import { sql } from 'kysely';
import { DEFAULT_JOB_RETRY, type JobKindDefinition } from '../engine/job-kind';
import { endRunFailed, runFlow, type RunActivities, type RunJobInput } from '../../workflows/run.flow';

/** A legacy Run's durable job: one workflow per Run (workflows/run.flow.ts, run.workflow.ts). */
export const runJob: JobKindDefinition<RunJobInput, RunActivities, Db> = {
  workflowType: 'runWorkflow',
  flow: runFlow,
  input: (runId) => ({ runId }),
  steps: {
    // Guarded by the stored status: a second run changes nothing.
    startRun: 'rerun',
    // The vendor call. Its outcome is also stored by the next step (requireAction or finalizeRun), and a
    // re-run of a round whose outcome is stored answers it without calling again.
    callModel: 'record',
    // Guarded by the Run's round counter and status; the debit by its operation key.
    requireAction: 'rerun',
    collectToolOutputs: 'rerun',
    finalizeRun: 'rerun',
  },
  retry: DEFAULT_JOB_RETRY,
  resource: { table: 'runs', finalStatuses: FINAL_RUN_STATUSES },
  labels: (db, runId) =>
    db
      .selectFrom('runs')
      .select(['account_id as accountId', 'model', 'vendor', sql<boolean>`true`.as('background'), 'status'])
      .where('id', '=', runId)
      .executeTakeFirst(),
  abandon: endRunFailed,
};
