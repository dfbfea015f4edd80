import { proxyActivities } from '@temporalio/workflow';
import { submitToolOutputsSignal } from './definitions';
import { endRunFailed, runFlow, type RunActivities, type RunJobInput } from './run.flow';
import { bookkeepingOptions, endingFailed, GENERATION_ACTIVITY, temporalFlowContext } from './temporal-context';

const generation = proxyActivities<Pick<RunActivities, 'callModel'>>(GENERATION_ACTIVITY);
type Bookkeeping = Omit<RunActivities, 'callModel'>;

/**
 * Durable name: `runWorkflow`. Workflow id = `run/<Run id>`. Signals `cancel` and `submit_tool_outputs` (a
 * wake-up: the outputs are in the database), query `status`.
 */
export async function runWorkflow(input: RunJobInput): Promise<string> {
  const options = bookkeepingOptions();
  const bookkeeping = proxyActivities<Bookkeeping>(options.bookkeeping);
  const start = proxyActivities<Pick<Bookkeeping, 'startRun'>>(options.start);
  const context = temporalFlowContext<RunActivities>(
    {
      startRun: start.startRun,
      callModel: generation.callModel,
      requireAction: bookkeeping.requireAction,
      collectToolOutputs: bookkeeping.collectToolOutputs,
      finalizeRun: bookkeeping.finalizeRun,
    },
    [submitToolOutputsSignal],
    { abandonableStart: options.versioned },
  );
  // A bookkeeping activity out of retries ends the Run failed instead of leaving it active for good (its thread
  // would take no other Run).
  return endingFailed(
    () => runFlow(context, input),
    () => endRunFailed(context.activities, input),
  );
}
