import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import { runFlow, SUBMIT_TOOL_OUTPUTS_SIGNAL, type RunActivities, type RunJobInput } from './run.flow';
import { temporalFlowContext } from './temporal-context';

const generation = proxyActivities<Pick<RunActivities, 'callModel'>>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  // As for Responses: a cancel waits for the aborted call, so finalisation sees what it reported.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes: ['ProviderError'] },
});

const bookkeeping = proxyActivities<Omit<RunActivities, 'callModel'>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 20 },
});

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
