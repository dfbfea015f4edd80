import Router from '@koa/router';
import type { Context } from 'koa';
import { parseInput } from '../http/validation';
import { idempotent, sendIdempotent, type Idempotency } from '../idempotency/idempotency';
import { modelWork } from '../limits/account-limits';
import type { FinishReason } from '../providers/provider';
import { legacyChatBodySchema, v1ChatBodySchema } from './chat.schema';
import { createChatService, type ChatCompletion, type ChatDeps } from './chat.service';

export type ChatRoutesDeps = ChatDeps & { idempotency: Idempotency };

/** Legacy POST /v2/chat/completions and v1 POST /v1/chat/completions, each with an optional Idempotency-Key. */
export function chatRoutes(deps: ChatRoutesDeps): Router {
  const service = createChatService(deps);
  const router = new Router();

  const reply = (ctx: Context, produce: (requestId?: string) => Promise<unknown>) =>
    sendIdempotent(ctx, deps.idempotency, produce);

  router.post('/v2/chat/completions', idempotent('chat'), modelWork({ job: false }), async (ctx) => {
    const body = parseInput(legacyChatBodySchema, ctx.request.body ?? {}, 'chat');
    const request = {
      model: body.model,
      messages: body.messages,
      instructions: body.instructions,
      maxTokens: body.max_tokens,
      temperature: body.temperature,
      tools: body.tools,
    };
    await reply(ctx, async (requestId) =>
      legacyCompletionToWire(await service.complete(ctx.state.auth.accountId, request, requestId)),
    );
  });

  router.post('/v1/chat/completions', idempotent('chat.v1'), modelWork({ job: false }), async (ctx) => {
    const body = parseInput(v1ChatBodySchema, ctx.request.body ?? {}, 'chat');
    await reply(ctx, async (requestId) => {
      const completion = await service.complete(
        ctx.state.auth.accountId,
        { model: body.model, messages: body.messages },
        requestId,
      );
      return { message: { role: 'assistant', content: completion.text } };
    });
  });

  return router;
}

/** api-decisions 8: `tools_calls` (sic, as the real service) and upper-case finish reasons. */
export function legacyCompletionToWire(completion: ChatCompletion) {
  return {
    created: completion.created,
    model: completion.model,
    message: { role: 'assistant' as const, content: completion.text },
    tools_calls: completion.toolCalls.map((call) => ({
      id: call.callId,
      type: 'function' as const,
      name: call.name,
      arguments: call.arguments,
    })),
    usage: {
      prompt_tokens: completion.inputTokens,
      completion_tokens: completion.outputTokens,
      total_tokens: completion.inputTokens + completion.outputTokens,
      cost: completion.cost,
    },
    finish_reason: finishReasonToWire(completion.finishReason, completion.toolCalls.length > 0),
  };
}

/** `other` (a vendor reason with no equivalent) is reported as a normal end: the text is all there is. */
function finishReasonToWire(
  reason: FinishReason,
  hasToolCalls: boolean,
): 'COMPLETE' | 'MAX_TOKENS' | 'TOOL_CALLS' | 'CONTENT_FILTER' {
  if (hasToolCalls || reason === 'tool_calls') return 'TOOL_CALLS';
  if (reason === 'length') return 'MAX_TOKENS';
  if (reason === 'content_filter') return 'CONTENT_FILTER';
  return 'COMPLETE';
}
