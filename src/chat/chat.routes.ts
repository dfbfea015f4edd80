import Router from '@koa/router';
import type { Context } from 'koa';
import { parseInput } from '../http/validation';
import { idempotent, sendIdempotent, type Idempotency } from '../idempotency/idempotency';
import { modelWork } from '../limits/account-limits';
import { legacyChatBodySchema, v1ChatBodySchema } from './chat.schema';
import { createChatService, type ChatDeps } from './chat.service';
import { legacyCompletionToWire } from './chat.wire';

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
