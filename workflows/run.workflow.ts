import { proxyActivities } from '@temporalio/workflow';
import { submitToolOutputsSignal } from './definitions';
import { endRunFailed, runFlow, type RunActivities, type RunJobInput } from './run.flow';
import { BOOKKEEPING_ACTIVITY, endingFailed, GENERATION_ACTIVITY, temporalFlowContext } from './temporal-context';

const generation = proxyActivities<Pick<RunActivities, 'callModel'>>(GENERATION_ACTIVITY);
const bookkeeping = proxyActivities<Omit<RunActivities, 'callModel'>>(BOOKKEEPING_ACTIVITY);

/**
 * Durable name: `runWorkflow`. Workflow id = `run/<Run id>`. Signals `cancel` and `submit_tool_outputs` (a
 * wake-up: the outputs are in the database), query `status`.
 */
export async function runWorkflow(input: RunJobInput): Promise<string> {
  const context = temporalFlowContext<RunActivities>(
    {
      startRun: bookkeeping.startRun,
      callModel: generation.callModel,
      requireAction: bookkeeping.requireAction,
      collectToolOutputs: bookkeeping.collectToolOutputs,
      finalizeRun: bookkeeping.finalizeRun,
    },
    [submitToolOutputsSignal],
  );
  // A bookkeeping activity out of retries ends the Run failed instead of leaving it active for good (its thread
  // would take no other Run).
  return endingFailed(
    () => runFlow(context, input),
    () => endRunFailed(context.activities, input),
  );
}
