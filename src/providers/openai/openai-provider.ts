import { createOpenAI } from '@ai-sdk/openai';
import type { VendorAdapterOptions, VendorProvider } from '../provider';
import { createAiSdkSpeechModel, createAiSdkTranscriptionModel } from '../shared/ai-sdk-audio-models';
import { createAiSdkEmbeddingModel } from '../shared/ai-sdk-embedding-model';
import { createAiSdkLanguageModel } from '../shared/ai-sdk-language-model';
import { definedOnly } from '../shared/provider-options';
import { sdkConnection } from '../shared/vendor-fetch';
import { asSdkResponsesModel, generateResponse, openResponsesStream } from './openai-responses-stream';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * OpenAI: language models through the Responses API (`POST /responses`), embeddings through
 * `POST /embeddings`, speech through `POST /audio/speech`, transcription through `POST /audio/transcriptions`.
 */
export function createOpenAIProvider(options: VendorAdapterOptions): VendorProvider {
  const openai = createOpenAI(sdkConnection(options, DEFAULT_BASE_URL));
  return {
    languageModel: createAiSdkLanguageModel({
      options,
      model: (modelId) => openai.responses(modelId),
      // Replies, streamed or not, are read by our own narrow path (openai-responses-stream.ts), unless a custom fetch
      // was given.
      openStream: options.fetch
        ? undefined
        : (model, call) => openResponsesStream(asSdkResponsesModel(model), call, options.maxStreamBytes),
      generate: options.fetch
        ? undefined
        : (model, call) => generateResponse(asSdkResponsesModel(model), call, options.maxStreamBytes),
      // OpenAI runs both (Responses API): file search over its vector stores, code in a container of its own
      // (a new one per call unless one is named).
      codeContainers: true,
      serverTools: {
        file_search: (tool) => ({
          type: 'provider',
          id: 'openai.file_search',
          name: 'file_search',
          args: { vectorStoreIds: tool.storeIds, ...definedOnly({ maxNumResults: tool.maxResults }) },
        }),
        code_interpreter: (tool) => ({
          type: 'provider',
          id: 'openai.code_interpreter',
          name: 'code_interpreter',
          args: { container: tool.container ?? { fileIds: tool.fileIds } },
        }),
      },
      providerOptions: (request) => ({
        openai: definedOnly({
          // The service keeps conversation state itself; the vendor should not store responses.
          store: false,
          reasoningEffort: request.reasoningEffort,
          textVerbosity: request.verbosity,
          parallelToolCalls: request.parallelToolCalls,
          // OpenAI's API treats a json_schema format without `strict` as not strict; the SDK's default is strict.
          strictJsonSchema: request.responseFormat ? (request.responseFormat.strict ?? false) : undefined,
        }),
      }),
    }),
    embeddingModel: createAiSdkEmbeddingModel({ options, model: (modelId) => openai.embedding(modelId) }),
    speechModel: createAiSdkSpeechModel({ options, model: (modelId) => openai.speech(modelId) }),
    transcriptionModel: createAiSdkTranscriptionModel({
      options,
      model: (modelId) => openai.transcription(modelId),
      providerOptions: (request) => ({
        openai: {
          ...definedOnly({ language: request.language, prompt: request.prompt, temperature: request.temperature }),
          timestampGranularities: ['segment'],
        },
      }),
    }),
  };
}
