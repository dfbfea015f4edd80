import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { VendorAdapterOptions, VendorProvider } from '../provider';
import { createAiSdkEmbeddingModel } from '../shared/ai-sdk-embedding-model';
import { createAiSdkLanguageModel } from '../shared/ai-sdk-language-model';
import { definedOnly } from '../shared/provider-options';
import { vendorFetchFor } from '../shared/vendor-fetch';

/**
 * Any vendor speaking OpenAI's Chat Completions (`POST /chat/completions`, usage requested in streams
 * through `stream_options.include_usage`) and `POST /embeddings`. There is no default host, so a base URL
 * is required; a key is optional (local servers often have none, and then no Authorization header is sent).
 */
export function createOpenAICompatibleProvider(options: VendorAdapterOptions): VendorProvider {
  if (!options.baseURL) {
    // A configuration mistake found at startup, not a vendor failure.
    throw new Error(`Vendor ${options.vendor} is OpenAI-compatible and needs a base URL.`);
  }
  // The SDK reads provider options under this name (up to the first dot), and passes unknown keys under
  // it into the request body.
  const name = options.vendor.replace(/\./g, '-');
  const compatible = createOpenAICompatible({
    name,
    baseURL: options.baseURL,
    apiKey: options.apiKey,
    fetch: vendorFetchFor(options),
    includeUsage: true,
  });
  return {
    languageModel: createAiSdkLanguageModel({
      options,
      model: (modelId) => compatible.chatModel(modelId),
      providerOptions: (request) => ({
        [name]: definedOnly({
          reasoningEffort: request.reasoningEffort,
          textVerbosity: request.verbosity,
          // OpenAI's API treats a json_schema format without `strict` as not strict; the SDK's default is strict.
          strictJsonSchema: request.responseFormat ? (request.responseFormat.strict ?? false) : undefined,
          // Not an SDK setting: sent as-is, the Chat Completions field name.
          parallel_tool_calls: request.parallelToolCalls,
        }),
      }),
    }),
    embeddingModel: createAiSdkEmbeddingModel({ options, model: (modelId) => compatible.embeddingModel(modelId) }),
  };
}
