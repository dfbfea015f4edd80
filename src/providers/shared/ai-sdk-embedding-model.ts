import type { EmbeddingModelV3 } from '@ai-sdk/provider';
import { ProviderError, type EmbeddingModel, type EmbedRequest, type VendorAdapterOptions } from '../provider';
import { openCallScope } from './call-scope';
import { classifyProviderError } from './classify-error';
import { countOf } from './result-mapping';
import { withRetries } from './retry';

/**
 * The port's EmbeddingModel over any AI SDK embedding model, with the same retries, deadline and errors.
 * Like the language model, it calls the vendor model's `doEmbed` directly (one value, no SDK-level
 * batching, retries or telemetry).
 */
export function createAiSdkEmbeddingModel(config: {
  options: VendorAdapterOptions;
  model: (modelId: string) => EmbeddingModelV3;
}): EmbeddingModel {
  const { options } = config;
  return {
    async embed(request: EmbedRequest) {
      const scope = openCallScope(request.signal, options.timeoutMs);
      const classify = (error: unknown) =>
        classifyProviderError(error, { vendor: options.vendor, apiKey: options.apiKey, stopReason: scope.stopReason() });
      try {
        const model = config.model(request.model);
        return await withRetries(
          async () => {
            const result = await model.doEmbed({ values: [request.input], abortSignal: scope.signal });
            const embedding = result.embeddings[0];
            if (embedding === undefined) {
              throw new ProviderError({ vendor: options.vendor, kind: 'malformed', message: `${options.vendor} returned no embedding.` });
            }
            scope.complete();
            // Gemini reports no embedding usage: it counts as zero.
            return { embedding, usage: { inputTokens: countOf(result.usage?.tokens) } };
          },
          { maxRetries: options.maxRetries, scope, classify },
        );
      } catch (error) {
        throw classify(error);
      } finally {
        scope.close();
      }
    },
  };
}
