import Router from '@koa/router';
import { idempotent, sendIdempotent, type Idempotency } from '../idempotency/idempotency';
import { modelWork } from '../limits/account-limits';
import { encodeEmbedding, parseEmbeddingsBody } from './embeddings.schema';
import { createEmbeddingsService, type EmbeddingsDeps } from './embeddings.service';

export type EmbeddingsRoutesDeps = EmbeddingsDeps & { idempotency: Idempotency };

/** POST /v2/embeddings (with an optional Idempotency-Key). */
export function embeddingsRoutes(deps: EmbeddingsRoutesDeps): Router {
  const service = createEmbeddingsService(deps);
  const router = new Router();

  router.post('/v2/embeddings', idempotent('embeddings'), modelWork({ job: false }), async (ctx) => {
    const body = parseEmbeddingsBody(ctx.request.body);
    const { accountId } = ctx.state.auth;
    const embed = async (requestId?: string) => {
      const result = await service.embed(accountId, body, requestId);
      return {
        embedding: encodeEmbedding(result.embedding, body.encoding_format),
        model: result.model,
        usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
      };
    };
    await sendIdempotent(ctx, deps.idempotency, embed);
  });

  return router;
}
