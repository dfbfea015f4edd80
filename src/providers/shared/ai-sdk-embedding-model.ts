import { embed, type EmbeddingModel as AiSdkEmbeddingModel } from 'ai';
import type { EmbeddingModel, EmbedRequest, VendorAdapterOptions } from '../provider';
import { openCallScope } from './call-scope';
import { classifyProviderError } from './classify-error';
import { countOf } from './result-mapping';
import { withRetries } from './retry';

/** The port's EmbeddingModel over any AI SDK embedding model, with the same retries, deadline and errors. */
export function createAiSdkEmbeddingModel(config: {
  options: VendorAdapterOptions;
  model: (modelId: string) => AiSdkEmbeddingModel;
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
            const result = await embed({ model, value: request.input, maxRetries: 0, abortSignal: scope.signal });
            // Gemini reports no embedding usage (the SDK then gives NaN): it counts as zero.
            return { embedding: result.embedding, usage: { inputTokens: countOf(result.usage?.tokens) } };
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
