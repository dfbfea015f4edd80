import Router from '@koa/router';
import { z } from 'zod';
import type { Catalog } from '../catalog/catalog.service';
import { createChatService, type ChatDeps } from '../chat/chat.service';
import { conversationsRoutes, type ConversationsRoutesDeps } from '../conversations/conversations.routes';
import { responsesRoutes, type ResponsesRoutesDeps } from '../responses/responses.routes';
import { encodeEmbedding } from '../embeddings/embeddings.schema';
import { createEmbeddingsService, type EmbeddingsDeps } from '../embeddings/embeddings.service';
import { invalidRequest, notFound } from '../errors';
import { idempotent, sendIdempotent, type Idempotency } from '../idempotency/idempotency';
import { modelWork } from '../limits/account-limits';
import { openAIErrorBody, toApiError } from '../http/error-middleware';
import { sendDataStream } from '../http/sse';
import { newId } from '../ids';
import { nullable, parseInput } from '../http/validation';
import { chatChunks, chatCompletionToOpenAI, openAIChatBody, toChatRequest } from './openai-chat';

/**
 * The OpenAI-compatible surface (`/openai/v1`): OpenAI's request and reply shapes over the same services,
 * keys and billing as `/v2`, for clients written against OpenAI (its SDK's `models.list()` and
 * `embeddings.create()`). Thin routes and mappers; errors there have OpenAI's body (http/error-middleware.ts).
 */
export type OpenAIRoutesDeps = EmbeddingsDeps & ChatDeps & { catalog: Catalog; idempotency: Idempotency };

export const OPENAI_PREFIX = '/openai/v1';

/**
 * Responses under /openai/v1: the /v2 routes and service, with OpenAI's default of a synchronous Response, and a
 * background Response streamed from its creation when asked (`background: true, stream: true`), as on OpenAI.
 */
export const openAIResponsesRoutes = (deps: ResponsesRoutesDeps): Router =>
  responsesRoutes(deps, { prefix: `${OPENAI_PREFIX}/responses`, defaultBackground: false, backgroundStreams: true });

/** Conversations under /openai/v1: the /v2 routes (their objects already have OpenAI's shapes). */
export const openAIConversationsRoutes = (deps: ConversationsRoutesDeps): Router =>
  conversationsRoutes(deps, `${OPENAI_PREFIX}/conversations`);

export const openAIEmbeddingsBody = z.strictObject({
  model: z.string().min(1, 'model is required'),
  input: z.union(
    [
      z.string().min(1, 'input must not be empty'),
      z.array(z.string().min(1, 'input items must not be empty')).min(1).max(256),
    ],
    {
      error: 'input must be a string or an array of strings (token arrays are not supported)',
    },
  ),
  encoding_format: nullable(z.enum(['float', 'base64'])),
  user: nullable(z.string().max(256)),
});

export function openAIRoutes(deps: OpenAIRoutesDeps): Router {
  const { catalog } = deps;
  const embeddings = createEmbeddingsService(deps);
  const chat = createChatService(deps);
  const router = new Router({ prefix: OPENAI_PREFIX });

  const modelObject = (model: { code: string; vendor: string }) => ({
    id: model.code,
    object: 'model' as const,
    created: 0,
    owned_by: model.vendor,
  });

  router.get('/models', (ctx) => {
    ctx.body = { object: 'list', data: catalog.listModels().map(modelObject) };
  });

  router.get('/models/:id', (ctx) => {
    const model = catalog.resolveModel(ctx.params.id);
    if (!model) throw notFound('model', `The model '${ctx.params.id}' does not exist.`);
    ctx.body = modelObject(model);
  });

  router.post('/embeddings', idempotent('embeddings.openai'), modelWork({ job: false }), async (ctx) => {
    const body = parseInput(openAIEmbeddingsBody, ctx.request.body ?? {}, 'embedding');
    const { accountId } = ctx.state.auth;
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    // One vendor call (and one debit) per input, in order; the first failure fails the request. With an
    // Idempotency-Key each input's debit is keyed by the request id and its index, so a retry bills none twice.
    await sendIdempotent(ctx, deps.idempotency, async (requestId) => {
      const results = [];
      for (const [index, input] of inputs.entries())
        results.push(
          await embeddings.embed(accountId, { model: body.model, input }, requestId && `${requestId}.${index}`),
        );
      const promptTokens = results.reduce((sum, result) => sum + result.promptTokens, 0);
      return {
        object: 'list',
        data: results.map((result, index) => ({
          object: 'embedding',
          index,
          embedding: encodeEmbedding(result.embedding, body.encoding_format),
        })),
        model: results[0]!.model,
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      };
    });
  });

  router.post('/chat/completions', idempotent('chat.openai'), modelWork({ job: false }), async (ctx) => {
    const body = parseInput(openAIChatBody, ctx.request.body ?? {}, 'chat');
    const { accountId } = ctx.state.auth;
    if (!body.stream)
      return sendIdempotent(ctx, deps.idempotency, async (requestId) =>
        chatCompletionToOpenAI(await chat.complete(accountId, toChatRequest(body), requestId)),
      );
    // A stream is not stored, so it cannot be replayed: a key with it would promise what is not kept.
    if (ctx.state.idempotency)
      throw invalidRequest(
        'chat',
        'Idempotency-Key applies to completions without stream: a stream is not stored to be replayed.',
      );
    const requestId = newId('req');
    const stream = await chat.stream(accountId, toChatRequest(body), requestId);
    await sendDataStream(ctx, () =>
      withErrorFrame(chatChunks({ ...stream, requestId }, body.stream_options?.include_usage === true)),
    );
  });

  return router;
}

/** A failure after the stream started ends it with OpenAI's error frame (its SDK raises it as an APIError). */
async function* withErrorFrame(chunks: AsyncIterable<object>): AsyncIterable<object> {
  try {
    yield* chunks;
  } catch (error) {
    yield openAIErrorBody(toApiError(error));
  }
}
