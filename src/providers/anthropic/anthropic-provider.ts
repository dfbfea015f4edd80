import { createAnthropic } from '@ai-sdk/anthropic';
import type { GenerateTextRequest, VendorAdapterOptions, VendorProvider } from '../provider';
import { createAiSdkLanguageModel } from '../shared/ai-sdk-language-model';
import { definedOnly } from '../shared/provider-options';
import { sdkConnection } from '../shared/vendor-fetch';

const DEFAULT_BASE_URL = 'https://api.anthropic.com/v1';

/**
 * Anthropic: the Messages API (`POST /messages`, `x-api-key` + `anthropic-version`). Anthropic has no
 * embeddings, so `embeddingModel` is left out.
 */
export function createAnthropicProvider(options: VendorAdapterOptions): VendorProvider {
  const anthropic = createAnthropic(sdkConnection(options, DEFAULT_BASE_URL));
  return {
    languageModel: createAiSdkLanguageModel({
      options,
      model: (modelId) => anthropic.messages(modelId),
      // The Messages API continues a trailing assistant message ("prefill").
      continuesReplies: true,
      // Code execution in Anthropic's sandbox (the SDK adds its beta header); Anthropic has no file search.
      serverTools: {
        code_interpreter: () => ({
          type: 'provider',
          id: 'anthropic.code_execution_20250825',
          name: 'code_execution',
          args: {},
        }),
      },
      providerOptions: (request) => ({ anthropic: anthropicOptions(request) }),
    }),
  };
}

/**
 * Reasoning effort maps to Anthropic's `effort` (it has no "minimal": the lowest level is used). A model
 * without effort support rejects it with a 400, which is the client's to fix. No verbosity knob exists.
 */
function anthropicOptions(request: GenerateTextRequest) {
  const effort = request.reasoningEffort === 'minimal' ? 'low' : request.reasoningEffort;
  return definedOnly({
    effort,
    disableParallelToolUse: request.parallelToolCalls === false ? true : undefined,
  });
}
