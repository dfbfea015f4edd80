import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import { responseFlow, type ResponseActivities, type ResponseJobInput } from './response.flow';
import { temporalFlowContext } from './temporal-context';

const generation = proxyActivities<Pick<ResponseActivities, 'callProvider'>>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  // The SDK's effective default is TRY_CANCEL; WAIT makes finalisation see the usage of an aborted call.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes: ['ProviderError'] },
});

const bookkeeping = proxyActivities<Omit<ResponseActivities, 'callProvider'>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 20 },
});

/** Durable name: `responseWorkflow`. Workflow id = `response/<Response id>`. Signal `cancel`, query `status`. */
export async function responseWorkflow(input: ResponseJobInput): Promise<string> {
  return responseFlow(
    temporalFlowContext<ResponseActivities>({
      // Named one by one: proxyActivities returns a Proxy with no own keys, so spreading it copies nothing.
      startResponse: bookkeeping.startResponse,
      callProvider: generation.callProvider,
      finalizeResponse: bookkeeping.finalizeResponse,
      sendWebhook: bookkeeping.sendWebhook,
    }),
    input,
  );
}
