import { createOpenAI } from '@ai-sdk/openai';
import type { VendorAdapterOptions, VendorProvider } from '../provider';
import { createAiSdkEmbeddingModel } from '../shared/ai-sdk-embedding-model';
import { createAiSdkLanguageModel } from '../shared/ai-sdk-language-model';
import { definedOnly } from '../shared/provider-options';
import { defaultVendorFetch } from '../shared/vendor-fetch';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * OpenAI: language models through the Responses API (`POST /responses`), embeddings through
 * `POST /embeddings`. Key, base URL and fetch come from the options only: an explicit default base URL and
 * an explicit (possibly empty) key keep the SDK from reading OPENAI_* environment variables.
 */
export function createOpenAIProvider(options: VendorAdapterOptions): VendorProvider {
  const openai = createOpenAI({
    apiKey: options.apiKey ?? '',
    baseURL: options.baseURL ?? DEFAULT_BASE_URL,
    fetch: options.fetch ?? defaultVendorFetch(),
  });
  return {
    languageModel: createAiSdkLanguageModel({
      options,
      model: (modelId) => openai.responses(modelId),
      providerOptions: (request) => ({
        openai: definedOnly({
          // The service keeps conversation state itself; the vendor should not store responses.
          store: false,
          reasoningEffort: request.reasoningEffort,
          textVerbosity: request.verbosity,
          parallelToolCalls: request.parallelToolCalls,
        }),
      }),
    }),
    embeddingModel: createAiSdkEmbeddingModel({ options, model: (modelId) => openai.embedding(modelId) }),
  };
}
