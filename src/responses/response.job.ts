import type { Db } from '../db/database';
import { DEFAULT_JOB_RETRY, type JobKindDefinition } from '../engine/job-kind';
import { responseFlowDefinition, type ResponseJobInput } from '../../workflows/response.flow';
import { createResponseActivities, type ResponseActivityDeps } from './response.activities';
import type { ResponseActivities } from '../../workflows/response.flow';
import { FINAL_STATUSES } from './response-types';

declare module '../engine/job-kind' {
  interface JobKinds {
    response: ResponseJobInput;
  }
}

/** A Response's durable job: one workflow per Response (workflows/response.flow.ts). */
export const responseJob: JobKindDefinition<ResponseJobInput, ResponseActivities, ResponseActivityDeps, Db> = {
  flow: responseFlowDefinition,
  activities: createResponseActivities,
  retry: DEFAULT_JOB_RETRY,
  resource: { table: 'responses', finalStatuses: FINAL_STATUSES },
  labels: (db, responseId) =>
    db
      .selectFrom('responses')
      .select(['account_id as accountId', 'model', 'vendor', 'background', 'status'])
      .where('id', '=', responseId)
      .executeTakeFirst(),
};
