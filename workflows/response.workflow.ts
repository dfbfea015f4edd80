import { proxyActivities } from '@temporalio/workflow';
import { endResponseFailed, responseFlow, type ResponseActivities, type ResponseJobInput } from './response.flow';
import { bookkeepingOptions, endingFailed, GENERATION_ACTIVITY, temporalFlowContext } from './temporal-context';

// The MCP steps talk to remote servers, heartbeat and are cancelled like the vendor call.
const generation =
  proxyActivities<Pick<ResponseActivities, 'callProvider' | 'listMcpTools' | 'callMcpTool'>>(GENERATION_ACTIVITY);
type Bookkeeping = Omit<ResponseActivities, 'callProvider' | 'listMcpTools' | 'callMcpTool'>;

/** Durable name: `responseWorkflow`. Workflow id = `response/<Response id>`. Signal `cancel`, query `status`. */
export async function responseWorkflow(input: ResponseJobInput): Promise<string> {
  const options = bookkeepingOptions();
  const bookkeeping = proxyActivities<Bookkeeping>(options.bookkeeping);
  const start = proxyActivities<Pick<Bookkeeping, 'startResponse'>>(options.start);
  const context = temporalFlowContext<ResponseActivities>(
    {
      // Named one by one: proxyActivities returns a Proxy with no own keys, so spreading it copies nothing.
      startResponse: start.startResponse,
      planRoute: bookkeeping.planRoute,
      listMcpTools: generation.listMcpTools,
      callProvider: generation.callProvider,
      callMcpTool: generation.callMcpTool,
      finalizeResponse: bookkeeping.finalizeResponse,
      sendWebhook: bookkeeping.sendWebhook,
    },
    [],
    { abandonableStart: options.versioned },
  );
  return endingFailed(
    () => responseFlow(context, input),
    () => endResponseFailed(context.activities, input),
  );
}
