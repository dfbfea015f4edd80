import { newId } from '../ids';
import type { Ledger } from '../billing/ledger';
import { priceCall } from '../billing/pricing';
import { promptTokenBound } from '../responses/prompt';
import type { CatalogModel, ModelType } from '../catalog/catalog-types';
import type { ErrorArea } from '../errors';
import type { EmbeddingModel } from '../providers/provider';
import { vendorErrorToApiError } from '../providers/provider-errors';
import { callWithFailover, type FailoverDeps } from '../routing/failover-call';

/** The slices of AppDeps this service uses (kept structural so it does not depend on how they are built). */
export interface EmbeddingsDeps {
  ledger: Ledger;
  catalog: FailoverDeps['catalog'] & {
    requireUsableModel(code: string, area: ErrorArea, type: ModelType): CatalogModel | Promise<CatalogModel>;
  };
  providers: { embeddingModel(vendorCode: string): EmbeddingModel };
  /** Failovers and the traffic per target of routes. */
  metrics?: FailoverDeps['metrics'];
}

export interface EmbeddingResult {
  embedding: number[];
  model: string;
  promptTokens: number;
  /** The billed request, as written in the debit's metadata. */
  requestId: string;
}

/** One synchronous embedding call, billed once per request (api-decisions 10, 11). */
export function createEmbeddingsService(deps: EmbeddingsDeps) {
  /** `requestId`: the id to key the debit by, when an Idempotency-Key chose it (a retried call bills once). */
  async function embed(
    accountId: string,
    input: { model: string; input: string },
    requestId = newId('req'),
  ): Promise<EmbeddingResult> {
    const model = await deps.catalog.requireUsableModel(input.model, 'embedding', 'embed');
    // Held before anything is spent upstream (docs/architecture.md, "Money: holds"): the input's upper bound of tokens.
    const operationKey = `embedding:${requestId}`;
    const maxCost = priceCall(model.price, {
      input: promptTokenBound({ items: [{ type: 'message', role: 'user', text: input.input }] }),
      output: 0,
    }).amount;
    // A route's hold is at its dearest target's price; the debit at the price of the one that served (api-decisions 32).
    const { embedded, served } = await deps.ledger.withHold({ accountId, operationKey, amount: maxCost }, async () => {
      let answered: { result: Awaited<ReturnType<EmbeddingModel['embed']>>; served: CatalogModel };
      try {
        answered = await callWithFailover(model, deps, ({ target, maxRetries }) =>
          deps.providers
            .embeddingModel(target.vendor)
            .embed({ model: target.upstreamId, input: input.input, maxRetries }),
        );
      } catch (error) {
        throw vendorErrorToApiError(error, 'embedding');
      }
      const promptTokens = answered.result.usage.inputTokens;
      await deps.ledger.debit({
        accountId,
        cost: priceCall(answered.served.price, { input: promptTokens, output: 0 }).exact,
        operationKey,
        metadata: {
          source: 'api',
          vendor: answered.served.vendor,
          model: answered.served.code,
          ...(model.route ? { route: model.code } : {}),
          service: 'embeddings',
          request_id: requestId,
        },
        usage: { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens },
      });
      return { embedded: answered.result, served: answered.served };
    });
    const promptTokens = embedded.usage.inputTokens;
    return { embedding: embedded.embedding, model: served.code, promptTokens, requestId };
  }

  return { embed };
}

export type EmbeddingsService = ReturnType<typeof createEmbeddingsService>;
