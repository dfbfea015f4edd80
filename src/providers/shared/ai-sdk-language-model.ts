import type {
  JSONSchema7,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3ProviderTool,
  LanguageModelV3StreamPart,
  SharedV3ProviderOptions,
} from '@ai-sdk/provider';
import {
  ProviderError,
  type GenerateTextRequest,
  type GenerateTextResult,
  type LanguageModel,
  type ServerTool,
  type ServerToolType,
  type TextStreamPart,
  type ToolCall,
  type VendorAdapterOptions,
} from '../provider';
import { openCallScope, type CallScope } from './call-scope';
import { classifyProviderError } from './classify-error';
import { toPrompt } from './prompt-messages';
import { toFinishReason, toTokenCounts, toToolCall } from './result-mapping';
import { retryDelayMs, sleep, withRetries } from './retry';
import { toFunctionTools, toToolChoice } from './tool-definitions';

export type ProviderOptions = SharedV3ProviderOptions;

/** What a non-streamed call answers, in the AI SDK's shapes (`doGenerate`'s): the parts the port uses. */
export type GeneratedParts = Pick<LanguageModelV3GenerateResult, 'content' | 'finishReason' | 'usage'>;

export interface AiSdkLanguageModelConfig {
  options: VendorAdapterOptions;
  /** The vendor's AI SDK model for a model id (the only vendor-specific piece besides provider options). */
  model: (modelId: string) => LanguageModelV3;
  /** Vendor-specific knobs (reasoning effort, verbosity, parallel tool calls) for one request. */
  providerOptions?: (request: GenerateTextRequest) => ProviderOptions | undefined;
  /**
   * Opens a streamed call and returns its parts, in the AI SDK's shapes. By default the model's `doStream`;
   * a vendor may read its stream more cheaply itself (OpenAI Responses: openai-responses-stream.ts).
   */
  openStream?: (
    model: LanguageModelV3,
    call: LanguageModelV3CallOptions,
  ) => Promise<AsyncIterable<LanguageModelV3StreamPart>>;
  /**
   * Makes a non-streamed call and returns its parts, in the AI SDK's shapes. By default the model's `doGenerate`; a
   * vendor may read its reply more cheaply itself (OpenAI Responses: openai-responses-stream.ts).
   */
  generate?: (model: LanguageModelV3, call: LanguageModelV3CallOptions) => Promise<GeneratedParts>;
  /** The vendor continues a trailing assistant message (LanguageModel.continuesReplies). */
  continuesReplies?: boolean;
  /** The server tools the vendor runs, each as the vendor's AI SDK tool (LanguageModel.serverTools). */
  serverTools?: {
    [Type in ServerToolType]?: (tool: Extract<ServerTool, { type: Type }>) => LanguageModelV3ProviderTool;
  };
  /** Its code execution takes a container (an id, or files for a new one): OpenAI's does. */
  codeContainers?: boolean;
}

/**
 * The port's LanguageModel over any AI SDK vendor model: one call settings mapping, retries only before
 * output, one deadline per call, every failure classified into a ProviderError. Each vendor adapter is
 * this plus its provider factory and provider options.
 *
 * It calls the vendor model's own `doGenerate` / `doStream` (the AI SDK provider specification) rather
 * than `generateText` / `streamText`: those add what this service does not use (multi-step tool loops,
 * tool execution, telemetry spans, their own retries, re-validating our prompt with zod on every call),
 * and that cost more CPU per call than the rest of a request (bench/README.md).
 * The wire protocol, request building, response parsing and errors are the vendor SDK's, with one exception: an
 * adapter may read its replies itself (`openStream`, `generate`), which only the OpenAI Responses adapter does
 * (docs/architecture.md, "Where we depart from the original design").
 */
export function createAiSdkLanguageModel(config: AiSdkLanguageModelConfig): LanguageModel {
  const { options } = config;
  const openStream = config.openStream ?? sdkStream;
  const generateParts = config.generate ?? ((model, call) => model.doGenerate(call));
  const classifierFor = (scope: CallScope) => (error: unknown) =>
    classifyProviderError(error, { vendor: options.vendor, apiKey: options.apiKey, stopReason: scope.stopReason() });

  // Built once per call (not per attempt): a bad prompt fails before any HTTP request.
  function callSettings(
    request: GenerateTextRequest,
    scope: CallScope,
  ): { model: LanguageModelV3; call: LanguageModelV3CallOptions } {
    const functionTools = toFunctionTools(request.tools);
    const serverTools = (request.serverTools ?? []).map((tool) => serverToolOf(tool));
    const tools = serverTools.length > 0 ? [...(functionTools ?? []), ...serverTools] : functionTools;
    return {
      model: config.model(request.model),
      call: {
        // A reply to continue is the trailing assistant message (the vendors that continue reject trailing whitespace).
        prompt: toPrompt(
          request.instructions,
          request.continueFrom
            ? [...request.items, { type: 'message', role: 'assistant', text: request.continueFrom.trimEnd() }]
            : request.items,
          options.vendor,
        ),
        tools,
        toolChoice: toToolChoice(request.toolChoice, functionTools !== undefined),
        temperature: request.temperature,
        topP: request.topP,
        maxOutputTokens: request.maxOutputTokens,
        responseFormat: request.responseFormat
          ? {
              type: 'json',
              schema: request.responseFormat.schema as JSONSchema7 | undefined,
              name: request.responseFormat.name,
              description: request.responseFormat.description,
            }
          : undefined,
        providerOptions: config.providerOptions?.(request),
        abortSignal: scope.signal,
      },
    };
  }

  /** A server tool as the vendor's AI SDK tool; one the vendor does not run is a programming error (callers check). */
  function serverToolOf(tool: ServerTool): LanguageModelV3ProviderTool {
    const build = config.serverTools?.[tool.type] as ((tool: ServerTool) => LanguageModelV3ProviderTool) | undefined;
    if (!build) throw new Error(`${options.vendor} does not run ${tool.type} tools.`);
    return build(tool);
  }

  async function generate(request: GenerateTextRequest): Promise<GenerateTextResult> {
    const scope = openCallScope(request.signal, options.timeoutMs);
    const classify = classifierFor(scope);
    try {
      const { model, call } = callSettings(request, scope);
      return await withRetries(
        async () => {
          const result = await generateParts(model, call);
          if (result.finishReason.unified === 'error') throw failedWithoutError(options.vendor);
          let text = '';
          const toolCalls: ToolCall[] = [];
          for (const part of result.content) {
            if (part.type === 'text') text += part.text;
            // Server-side (provider-executed) tools are not offered, so their calls are not ours to return.
            else if (part.type === 'tool-call' && !part.providerExecuted) toolCalls.push(toToolCall(part));
          }
          scope.complete();
          return {
            text,
            toolCalls,
            finishReason: toFinishReason(result.finishReason),
            usage: toTokenCounts(result.usage),
          };
        },
        { maxRetries: request.maxRetries ?? options.maxRetries, scope, classify },
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
      const { model, call } = callSettings(request, scope);
      for (let retryNumber = 1; ; retryNumber += 1) {
        try {
          const parts = await openStream(model, call);
          let finish: TextStreamPart | undefined;
          // Leaving the loop early (an error, or the consumer stopped) closes the parts; scope.close() aborts the request.
          for await (const part of parts) {
            switch (part.type) {
              case 'text-delta':
                if (part.delta.length === 0) break;
                produced = true;
                yield { type: 'text-delta', text: part.delta };
                break;
              case 'tool-call':
                if (part.providerExecuted) break;
                produced = true;
                yield { type: 'tool-call', ...toToolCall(part) };
                break;
              case 'finish':
                if (part.finishReason.unified === 'error') throw failedWithoutError(options.vendor);
                finish = {
                  type: 'finish',
                  finishReason: toFinishReason(part.finishReason),
                  usage: toTokenCounts(part.usage),
                };
                break;
              case 'error':
                throw part.error;
            }
          }
          if (!finish) {
            throw new ProviderError({
              vendor: options.vendor,
              kind: 'malformed',
              message: `${options.vendor} ended the stream without finishing it.`,
            });
          }
          scope.complete();
          yield finish;
          return;
        } catch (raw) {
          const error = classify(raw);
          if (produced) throw error;
          const delay = retryDelayMs(error, retryNumber, request.maxRetries ?? options.maxRetries, scope.remainingMs());
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

  return {
    continuesReplies: config.continuesReplies ?? false,
    serverTools: {
      ...(config.serverTools?.file_search ? { file_search: true as const } : {}),
      ...(config.serverTools?.code_interpreter
        ? { code_interpreter: { containers: config.codeContainers ?? false } }
        : {}),
    },
    generateText: generate,
    streamText: stream,
  };
}

/** The SDK's own stream of a call: `doStream`'s web stream, read until the consumer stops (which cancels it). */
async function* sdkStream(
  model: LanguageModelV3,
  call: LanguageModelV3CallOptions,
): AsyncGenerator<LanguageModelV3StreamPart> {
  const { stream } = await model.doStream(call);
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/** The vendor ended the generation as failed without saying why (e.g. OpenAI `response.failed`, no error). */
function failedWithoutError(vendor: string): ProviderError {
  return new ProviderError({ vendor, kind: 'server', message: `${vendor} reported that the generation failed.` });
}
