import { createGoogleGenerativeAI } from '@ai-sdk/google';
import type { VendorAdapterOptions, VendorProvider } from '../provider';
import { createAiSdkEmbeddingModel } from '../shared/ai-sdk-embedding-model';
import { createAiSdkLanguageModel } from '../shared/ai-sdk-language-model';
import { sdkConnection } from '../shared/vendor-fetch';

const DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com/v1beta';

/**
 * Google Gemini: `models/{id}:generateContent` / `:streamGenerateContent?alt=sse` and `:embedContent`,
 * key in `x-goog-api-key`. Reasoning effort becomes `thinkingConfig.thinkingLevel` (same four levels);
 * Gemini has no verbosity or parallel-tool-call switch.
 */
export function createGoogleProvider(options: VendorAdapterOptions): VendorProvider {
  const google = createGoogleGenerativeAI(sdkConnection(options, DEFAULT_BASE_URL));
  return {
    languageModel: createAiSdkLanguageModel({
      options,
      model: (modelId) => google.languageModel(modelId),
      providerOptions: (request) =>
        request.reasoningEffort
          ? { google: { thinkingConfig: { thinkingLevel: request.reasoningEffort } } }
          : undefined,
    }),
    embeddingModel: createAiSdkEmbeddingModel({ options, model: (modelId) => google.embedding(modelId) }),
  };
}
