import Router from '@koa/router';
import { parseEmbeddingsBody } from './embeddings.schema';
import { createEmbeddingsService, type EmbeddingsDeps } from './embeddings.service';

/** POST /v2/embeddings. */
export function embeddingsRoutes(deps: EmbeddingsDeps): Router {
  const service = createEmbeddingsService(deps);
  const router = new Router();

  router.post('/v2/embeddings', async (ctx) => {
    const body = parseEmbeddingsBody(ctx.request.body);
    const result = await service.embed(ctx.state.auth.accountId, body, ctx.state.auth.account.balance);
    ctx.body = {
      embedding: result.embedding,
      model: result.model,
      usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
    };
  });

  return router;
}
