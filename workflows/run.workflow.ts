import { CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import { submitToolOutputsSignal } from './definitions';
import { runFlow, type RunActivities, type RunJobInput } from './run.flow';
import { BOOKKEEPING_ACTIVITY, GENERATION_ACTIVITY, temporalFlowContext } from './temporal-context';

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
  try {
    return await runFlow(context, input);
  } catch (error) {
    // A bookkeeping activity ran out of retries (the database unreachable for minutes): end the Run failed once
    // it is back, instead of leaving it active for good (its thread would take no other Run). The embedded
    // engine does the same through the kind's `abandon`.
    if (isCancellation(error)) throw error;
    const ending = { kind: 'failed', code: 'run.execution_failed', message: 'The Run could not be processed; create it again.', inputTokens: 0, outputTokens: 0 } as const;
    return (await CancellationScope.nonCancellable(() => bookkeeping.finalizeRun({ ...input, round: 0, ending }))).status;
  }
}
