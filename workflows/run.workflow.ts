import { proxyActivities } from '@temporalio/workflow';
import { runFlow, SUBMIT_TOOL_OUTPUTS_SIGNAL, type RunActivities, type RunJobInput } from './run.flow';
import { BOOKKEEPING_ACTIVITY, GENERATION_ACTIVITY, temporalFlowContext } from './temporal-context';

const generation = proxyActivities<Pick<RunActivities, 'callModel'>>(GENERATION_ACTIVITY);
const bookkeeping = proxyActivities<Omit<RunActivities, 'callModel'>>(BOOKKEEPING_ACTIVITY);

/**
 * Durable name: `runWorkflow`. Workflow id = `run/<Run id>`. Signals `cancel` and `submit_tool_outputs` (a
 * wake-up: the outputs are in the database), query `status`.
 */
export async function runWorkflow(input: RunJobInput): Promise<string> {
  return runFlow(
    temporalFlowContext<RunActivities>(
      {
        startRun: bookkeeping.startRun,
        callModel: generation.callModel,
        requireAction: bookkeeping.requireAction,
        collectToolOutputs: bookkeeping.collectToolOutputs,
        finalizeRun: bookkeeping.finalizeRun,
      },
      [SUBMIT_TOOL_OUTPUTS_SIGNAL],
    ),
    input,
  );
}
