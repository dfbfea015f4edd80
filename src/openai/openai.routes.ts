import Router from '@koa/router';
import { z } from 'zod';
import type { Catalog } from '../catalog/catalog.service';
import { createChatService, type ChatDeps } from '../chat/chat.service';
import { encodeEmbedding } from '../embeddings/embeddings.schema';
import { createEmbeddingsService, type EmbeddingsDeps } from '../embeddings/embeddings.service';
import { invalidRequest, notFound } from '../errors';
import { parseInput } from '../http/validation';
import { chatCompletionToOpenAI, openAIChatBody, toChatRequest } from './openai-chat';

/**
 * The OpenAI-compatible surface (`/openai/v1`): OpenAI's request and reply shapes over the same services,
 * keys and billing as `/v2`, for clients written against OpenAI (its SDK's `models.list()` and
 * `embeddings.create()`). Thin routes and mappers; errors there have OpenAI's body (http/error-middleware.ts).
 */
export type OpenAIRoutesDeps = EmbeddingsDeps & ChatDeps & { catalog: Catalog };

export const OPENAI_PREFIX = '/openai/v1';

const embeddingsBody = z.strictObject({
  model: z.string().min(1, 'model is required'),
  input: z.union([z.string().min(1, 'input must not be empty'), z.array(z.string().min(1, 'input items must not be empty')).min(1).max(256)], {
    error: 'input must be a string or an array of strings (token arrays are not supported)',
  }),
  encoding_format: z.enum(['float', 'base64']).optional(),
  user: z.string().max(256).optional(),
});

export function openAIRoutes(deps: OpenAIRoutesDeps): Router {
  const { catalog } = deps;
  const embeddings = createEmbeddingsService(deps);
  const chat = createChatService(deps);
  const router = new Router({ prefix: OPENAI_PREFIX });

  const modelObject = (model: { code: string; vendor: string }) => ({ id: model.code, object: 'model' as const, created: 0, owned_by: model.vendor });

  router.get('/models', (ctx) => {
    ctx.body = { object: 'list', data: catalog.listModels().map(modelObject) };
  });

  router.get('/models/:id', (ctx) => {
    const model = catalog.getModel(ctx.params.id);
    if (!model) throw notFound('model', `The model '${ctx.params.id}' does not exist.`);
    ctx.body = modelObject(model);
  });

  router.post('/embeddings', async (ctx) => {
    const body = parseInput(embeddingsBody, ctx.request.body ?? {}, 'embedding');
    const { accountId } = ctx.state.auth;
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    // One vendor call (and one debit) per input, in order; the first failure fails the request.
    const results = [];
    for (const input of inputs) results.push(await embeddings.embed(accountId, { model: body.model, input }));
    const promptTokens = results.reduce((sum, result) => sum + result.promptTokens, 0);
    ctx.body = {
      object: 'list',
      data: results.map((result, index) => ({ object: 'embedding', index, embedding: encodeEmbedding(result.embedding, body.encoding_format) })),
      model: results[0]!.model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    };
  });

  router.post('/chat/completions', async (ctx) => {
    const body = parseInput(openAIChatBody, ctx.request.body ?? {}, 'chat');
    if (body.stream) throw invalidRequest('chat', 'stream: true is not supported yet on /openai/v1/chat/completions; send stream: false.');
    const { accountId } = ctx.state.auth;
    ctx.body = chatCompletionToOpenAI(await chat.complete(accountId, toChatRequest(body)));
  });

  return router;
}
