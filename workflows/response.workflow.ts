import { proxyActivities } from '@temporalio/workflow';
import { endResponseFailed, responseFlow, type ResponseActivities, type ResponseJobInput } from './response.flow';
import { BOOKKEEPING_ACTIVITY, endingFailed, GENERATION_ACTIVITY, temporalFlowContext } from './temporal-context';

// The MCP steps talk to remote servers, heartbeat and are cancelled like the vendor call.
const generation =
  proxyActivities<Pick<ResponseActivities, 'callProvider' | 'listMcpTools' | 'callMcpTool'>>(GENERATION_ACTIVITY);
const bookkeeping =
  proxyActivities<Omit<ResponseActivities, 'callProvider' | 'listMcpTools' | 'callMcpTool'>>(BOOKKEEPING_ACTIVITY);

/** Durable name: `responseWorkflow`. Workflow id = `response/<Response id>`. Signal `cancel`, query `status`. */
export async function responseWorkflow(input: ResponseJobInput): Promise<string> {
  const context = temporalFlowContext<ResponseActivities>({
    // Named one by one: proxyActivities returns a Proxy with no own keys, so spreading it copies nothing.
    startResponse: bookkeeping.startResponse,
    planRoute: bookkeeping.planRoute,
    listMcpTools: generation.listMcpTools,
    callProvider: generation.callProvider,
    callMcpTool: generation.callMcpTool,
    finalizeResponse: bookkeeping.finalizeResponse,
    sendWebhook: bookkeeping.sendWebhook,
  });
  return endingFailed(
    () => responseFlow(context, input),
    () => endResponseFailed(context.activities, input),
  );
}
