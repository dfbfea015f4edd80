import type { EmbeddingModelV3 } from '@ai-sdk/provider';
import { ProviderError, type EmbeddingModel, type EmbedRequest, type VendorAdapterOptions } from '../provider';
import { countOf } from './result-mapping';
import { callVendor } from './vendor-call';

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
    embed(request: EmbedRequest) {
      return callVendor(options, request, async (abortSignal) => {
        const result = await config.model(request.model).doEmbed({ values: [request.input], abortSignal });
        const embedding = result.embeddings[0];
        if (embedding === undefined) {
          throw new ProviderError({
            vendor: options.vendor,
            kind: 'malformed',
            message: `${options.vendor} returned no embedding.`,
          });
        }
        // Gemini reports no embedding usage: it counts as zero.
        return { embedding, usage: { inputTokens: countOf(result.usage?.tokens) } };
      });
    },
  };
}
