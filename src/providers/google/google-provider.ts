import { createGoogleGenerativeAI } from '@ai-sdk/google';
import type { VendorAdapterOptions, VendorProvider } from '../provider';
import { createAiSdkEmbeddingModel } from '../shared/ai-sdk-embedding-model';
import { createAiSdkLanguageModel } from '../shared/ai-sdk-language-model';
import { definedOnly } from '../shared/provider-options';
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
      // Gemini's code execution, and its file search over file search stores (`fileSearchStores/...`).
      serverTools: {
        file_search: (tool) => ({
          type: 'provider',
          id: 'google.file_search',
          name: 'file_search',
          args: { fileSearchStoreNames: tool.storeIds, ...definedOnly({ topK: tool.maxResults }) },
        }),
        code_interpreter: () => ({ type: 'provider', id: 'google.code_execution', name: 'code_execution', args: {} }),
      },
      providerOptions: (request) =>
        request.reasoningEffort
          ? { google: { thinkingConfig: { thinkingLevel: request.reasoningEffort } } }
          : undefined,
    }),
    embeddingModel: createAiSdkEmbeddingModel({ options, model: (modelId) => google.embedding(modelId) }),
  };
}
