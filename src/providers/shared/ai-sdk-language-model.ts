import { generateText, streamText, type LanguageModel as AiSdkLanguageModel } from 'ai';
import {
  ProviderError,
  type GenerateTextRequest,
  type GenerateTextResult,
  type LanguageModel,
  type TextStreamPart,
  type VendorAdapterOptions,
} from '../provider';
import { openCallScope, type CallScope } from './call-scope';
import { classifyProviderError } from './classify-error';
import { toModelMessages } from './prompt-messages';
import { toFinishReason, toTokenCounts, toToolCall } from './result-mapping';
import { retryDelayMs, sleep, withRetries } from './retry';
import { toToolChoice, toToolSet } from './tool-definitions';

export type ProviderOptions = NonNullable<Parameters<typeof generateText>[0]['providerOptions']>;

export interface AiSdkLanguageModelConfig {
  options: VendorAdapterOptions;
  /** The vendor's AI SDK model for a model id (the only vendor-specific piece besides provider options). */
  model: (modelId: string) => AiSdkLanguageModel;
  /** Vendor-specific knobs (reasoning effort, verbosity, parallel tool calls) for one request. */
  providerOptions?: (request: GenerateTextRequest) => ProviderOptions | undefined;
}

/**
 * The port's LanguageModel over any AI SDK language model: one call settings mapping, retries only before
 * output, one deadline per call, every failure classified into a ProviderError. Each vendor adapter is
 * this plus its provider factory and provider options.
 */
export function createAiSdkLanguageModel(config: AiSdkLanguageModelConfig): LanguageModel {
  const { options } = config;
  const classifierFor = (scope: CallScope) => (error: unknown) =>
    classifyProviderError(error, { vendor: options.vendor, apiKey: options.apiKey, stopReason: scope.stopReason() });

  // Built once per call (not per attempt): a bad prompt fails before any HTTP request.
  function callSettings(request: GenerateTextRequest, scope: CallScope) {
    return {
      model: config.model(request.model),
      system: request.instructions,
      messages: toModelMessages(request.items, options.vendor),
      // System items come from our own conversation records, not from a third party.
      allowSystemInMessages: true,
      tools: toToolSet(request.tools),
      toolChoice: toToolChoice(request.toolChoice),
      temperature: request.temperature,
      topP: request.topP,
      maxOutputTokens: request.maxOutputTokens,
      providerOptions: config.providerOptions?.(request),
      // Retries are ours: they must stop once output reached the caller, which the SDK cannot know.
      maxRetries: 0,
      abortSignal: scope.signal,
    };
  }

  async function generate(request: GenerateTextRequest): Promise<GenerateTextResult> {
    const scope = openCallScope(request.signal, options.timeoutMs);
    const classify = classifierFor(scope);
    try {
      const settings = callSettings(request, scope);
      return await withRetries(
        async () => {
          const result = await generateText(settings);
          if (result.finishReason === 'error') throw failedWithoutError(options.vendor);
          return {
            text: result.text,
            toolCalls: result.toolCalls.map(toToolCall),
            finishReason: toFinishReason(result.finishReason),
            usage: toTokenCounts(result.totalUsage),
          };
        },
        { maxRetries: options.maxRetries, scope, classify },
      );
    } catch (error) {
      throw classify(error);
    } finally {
      scope.close();
    }
  }

  async function* stream(request: GenerateTextRequest): AsyncGenerator<TextStreamPart> {
    const scope = openCallScope(request.signal, options.timeoutMs);
    const classify = classifierFor(scope);
    // Once a delta or tool call reached the consumer a retry would repeat it: failures after that are final.
    let produced = false;
    try {
      const settings = callSettings(request, scope);
      for (let retryNumber = 1; ; retryNumber += 1) {
        try {
          // Without onError the SDK prints every stream error to the console itself.
          const result = streamText({ ...settings, onError: () => undefined });
          let finish: TextStreamPart | undefined;
          for await (const part of result.fullStream) {
            switch (part.type) {
              case 'text-delta':
                if (part.text.length === 0) break;
                produced = true;
                yield { type: 'text-delta', text: part.text };
                break;
              case 'tool-call':
                produced = true;
                yield { type: 'tool-call', ...toToolCall(part) };
                break;
              case 'finish':
                if (part.finishReason === 'error') throw failedWithoutError(options.vendor);
                finish = { type: 'finish', finishReason: toFinishReason(part.finishReason), usage: toTokenCounts(part.totalUsage) };
                break;
              case 'error':
                throw part.error;
              case 'abort':
                throw scope.signal.reason ?? new DOMException('The call was aborted.', 'AbortError');
            }
          }
          if (!finish) {
            throw new ProviderError({
              vendor: options.vendor,
              kind: 'malformed',
              message: `${options.vendor} ended the stream without finishing it.`,
            });
          }
          yield finish;
          return;
        } catch (raw) {
          const error = classify(raw);
          if (produced) throw error;
          const delay = retryDelayMs(error, retryNumber, options.maxRetries, scope.remainingMs());
          if (delay === undefined) throw error;
          await sleep(delay, scope);
        }
      }
    } catch (error) {
      throw classify(error);
    } finally {
      // Also reached when the consumer stops iterating early: cancels the upstream request.
      scope.close();
    }
  }

  return { generateText: generate, streamText: stream };
}

/** The vendor ended the generation as failed without saying why (e.g. OpenAI `response.failed`, no error). */
function failedWithoutError(vendor: string): ProviderError {
  return new ProviderError({ vendor, kind: 'server', message: `${vendor} reported that the generation failed.` });
}
