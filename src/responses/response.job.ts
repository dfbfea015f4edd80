import type { Db } from '../db/database';
import { FINAL_STATUSES } from './response-types';
import { DEFAULT_JOB_RETRY, type JobKindDefinition } from '../engine/job-kind';
import {
  endResponseFailed,
  responseFlow,
  type ResponseActivities,
  type ResponseJobInput,
} from '../../workflows/response.flow';

/** A Response's durable job: one workflow per Response (workflows/response.flow.ts, response.workflow.ts). */
export const responseJob: JobKindDefinition<ResponseJobInput, ResponseActivities, Db> = {
  workflowType: 'responseWorkflow',
  flow: responseFlow,
  input: (responseId) => ({ responseId }),
  steps: {
    // Guarded by the stored status: a second run changes nothing.
    startResponse: 'rerun',
    // A route's draw: a re-run replays it, never draws again (api-decisions 32).
    planRoute: 'record',
    // Listed once per Response: a re-run replays the listing (and its item ids).
    listMcpTools: 'record',
    // The vendor call: not repeatable (cost, another text), so a re-run replays its recorded outcome.
    callProvider: 'record',
    // At most once by its own record (mcp_calls): a re-run returns the stored result.
    callMcpTool: 'self-recorded',
    // Guarded by the stored status and the debit's operation key.
    finalizeResponse: 'rerun',
    // At most once: the delivery is claimed (recorded) here and sent by the webhook dispatcher, outside the job's
    // slot (webhooks/webhook-dispatcher.ts); a re-run finds the claim and sends nothing.
    sendWebhook: 'rerun',
  },
  retry: DEFAULT_JOB_RETRY,
  resource: { table: 'responses', finalStatuses: FINAL_STATUSES },
  labels: (db, responseId) =>
    db
      .selectFrom('responses')
      .select(['account_id as accountId', 'model', 'vendor', 'background', 'status'])
      .where('id', '=', responseId)
      .executeTakeFirst(),
  abandon: endResponseFailed,
};
