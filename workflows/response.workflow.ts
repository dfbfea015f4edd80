import {
  ActivityCancellationType,
  CancellationScope,
  defineQuery,
  defineSignal,
  isCancellation,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import { responseFlow, type ResponseActivities, type ResponseJobInput } from './response.flow';

export const cancelSignal = defineSignal<[reason?: string]>('cancel');
export const statusQuery = defineQuery<string>('status');

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

/** Durable name: `responseWorkflow`. Workflow id = Response id. Signal `cancel`, query `status`. */
export async function responseWorkflow(input: ResponseJobInput): Promise<string> {
  let status = 'queued';
  let cancelled = false;
  const scope = new CancellationScope();
  setHandler(cancelSignal, () => {
    cancelled = true;
    scope.cancel();
  });
  setHandler(statusQuery, () => status);
  return responseFlow(
    {
      // Named one by one: proxyActivities returns a Proxy with no own keys, so spreading it copies nothing.
      activities: {
        startResponse: bookkeeping.startResponse,
        callProvider: generation.callProvider,
        finalizeResponse: bookkeeping.finalizeResponse,
        sendWebhook: bookkeeping.sendWebhook,
      },
      cancellable: (fn) => scope.run(fn),
      nonCancellable: (fn) => CancellationScope.nonCancellable(fn),
      isCancellation,
      cancelRequested: () => cancelled,
      setStatus: (next) => {
        status = next;
      },
    },
    input,
  );
}
