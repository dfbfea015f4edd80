import {
  APICallError,
  JSONParseError,
  TypeValidationError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3Content,
  type LanguageModelV3FinishReason,
  type LanguageModelV3StreamPart,
  type LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { GeneratedParts } from '../shared/ai-sdk-language-model';
import { vendorRequest } from '../shared/vendor-fetch';

/**
 * A narrow streaming path for the OpenAI Responses API (a deliberate departure, docs/architecture.md, "Where we depart from the original design"):
 * the request is still the AI SDK's (its `getArgs` builds the body from the call, its config gives the URL and
 * headers), but the reply is read here, from undici's Node stream, instead of through the SDK's chain of web
 * streams (`TextDecoderStream` → `EventSourceParserStream` → a zod-validating `TransformStream` → a `tee` →
 * the model's own `TransformStream`). That chain cost about half of the service's CPU per streamed Response,
 * most of it zod's asynchronous parse of every chunk and web-stream bookkeeping (bench/README.md).
 *
 * Only what the provider port carries is read: text (and refusal) deltas, function calls, the finish with its
 * usage, and errors. The parts come out in the AI SDK's own shapes and meanings (finish reasons, usage, error
 * frames, an error before any output thrown as a retryable APICallError), so the shared loop in
 * `ai-sdk-language-model.ts` treats them exactly as the SDK's. A stream that ends without `response.completed`,
 * `response.incomplete` or `response.failed` has no finish part (the SDK would invent one).
 */
export interface SdkResponsesModel extends LanguageModelV3 {
  getArgs(options: LanguageModelV3CallOptions): Promise<{ args: Record<string, unknown> }>;
  readonly config: {
    url(options: { path: string; modelId: string }): string;
    headers(): Record<string, string | undefined>;
  };
}

/** The SDK's OpenAI Responses model, checked for the internals this path uses (a pinned SDK version has them). */
export function asSdkResponsesModel(model: LanguageModelV3): SdkResponsesModel {
  const candidate = model as Partial<SdkResponsesModel>;
  if (
    typeof candidate.getArgs !== 'function' ||
    typeof candidate.config?.url !== 'function' ||
    typeof candidate.config?.headers !== 'function'
  ) {
    throw new Error(
      'The @ai-sdk/openai Responses model no longer has getArgs/config: update openai-responses-stream.ts for this SDK version.',
    );
  }
  return candidate as SdkResponsesModel;
}

/**
 * The SDK's request of a call, sent on the vendor pool: its body (`getArgs`, with `extra` added), its URL and headers
 * (the model's config). Answers the reply and what reading it needs.
 */
async function sendSdkRequest(
  model: SdkResponsesModel,
  call: LanguageModelV3CallOptions,
  extra: Record<string, unknown>,
  maxBytes: number | undefined,
) {
  const { args } = await model.getArgs(call);
  const body = { ...args, ...extra };
  const url = model.config.url({ path: '/responses', modelId: model.modelId });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const [name, value] of Object.entries({ ...model.config.headers(), ...call.headers })) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  const reply = await vendorRequest(url, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: call.abortSignal,
    maxBytes,
  });
  const functionNames = new Set((call.tools ?? []).flatMap((tool) => (tool.type === 'function' ? [tool.name] : [])));
  return { body, url, reply, functionNames };
}

export async function openResponsesStream(
  model: SdkResponsesModel,
  call: LanguageModelV3CallOptions,
  maxBytes?: number,
): Promise<AsyncIterable<LanguageModelV3StreamPart>> {
  const { body, url, reply, functionNames } = await sendSdkRequest(model, call, { stream: true }, maxBytes);
  const contentType = reply.headers['content-type'] ?? '';
  if (reply.status < 200 || reply.status >= 300 || !contentType.includes('text/event-stream')) {
    const text = await reply.text();
    throw failedCall({ url, body, status: reply.status, headers: reply.headers, text });
  }
  return readParts(reply.body, { url, body, headers: reply.headers, functionNames });
}

/**
 * A non-streamed call by the same narrow path: the SDK's request, sent on the vendor pool, and the reply's JSON read
 * here for what the port carries (message text and refusals, function calls, the finish and its usage), with
 * `doGenerate`'s meanings: an HTTP error as its failed-response handler reports it, a response with an `error` as a
 * non-retryable 400, a reply that is not a Responses object as "Invalid JSON response". What this skips is the SDK's
 * `postJsonToApi` (global fetch's web streams) and zod's validation of the whole Responses object, about a fifth of the
 * service's busy CPU in chat completions at saturation (bench/README.md, 2026-12-01). Items the port does not carry
 * (reasoning, server tools' calls) are not read, so an unknown item type is no error here.
 */
export async function generateResponse(
  model: SdkResponsesModel,
  call: LanguageModelV3CallOptions,
  maxBytes?: number,
): Promise<GeneratedParts> {
  const { body, url, reply, functionNames } = await sendSdkRequest(model, call, {}, maxBytes);
  const text = await reply.text();
  const facts = { url, body, status: reply.status, headers: reply.headers, text };
  if (reply.status < 200 || reply.status >= 300) throw failedCall(facts);
  let response: unknown;
  try {
    response = JSON.parse(text);
  } catch (cause) {
    throw invalidResponse(facts, cause);
  }
  if (!isJsonObject(response) || !Array.isArray(response.output)) throw invalidResponse(facts);
  if (response.error != null) {
    const message = isJsonObject(response.error) ? response.error.message : undefined;
    if (typeof message !== 'string') throw invalidResponse(facts);
    throw new APICallError({
      message,
      url,
      requestBodyValues: body,
      statusCode: 400,
      responseHeaders: reply.headers,
      responseBody: text,
      isRetryable: false,
    });
  }
  const content: LanguageModelV3Content[] = [];
  let hasFunctionCall = false;
  let hasRefusal = false;
  for (const item of response.output) {
    if (!isJsonObject(item)) throw invalidResponse(facts);
    if (item.type === 'message') {
      if (!Array.isArray(item.content)) throw invalidResponse(facts);
      for (const part of item.content) {
        if (isJsonObject(part) && part.type === 'output_text' && typeof part.text === 'string') {
          content.push({ type: 'text', text: part.text });
        } else if (isJsonObject(part) && part.type === 'refusal' && typeof part.refusal === 'string') {
          hasRefusal = true;
          content.push({ type: 'text', text: part.refusal });
        } else {
          throw invalidResponse(facts);
        }
      }
    } else if (item.type === 'function_call') {
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.arguments !== 'string')
        throw invalidResponse(facts);
      hasFunctionCall = true;
      const call = { type: 'tool-call' as const, toolCallId: item.call_id, toolName: item.name, input: item.arguments };
      content.push(...(expandParallelCall(call, functionNames) ?? [call]));
    }
  }
  const reason = isJsonObject(response.incomplete_details) ? response.incomplete_details.reason : undefined;
  return {
    content,
    finishReason: {
      unified: mapFinishReason(reason, hasFunctionCall, hasRefusal),
      raw: typeof reason === 'string' ? reason : undefined,
    },
    usage: toUsage(isJsonObject(response.usage) ? response.usage : undefined),
  };
}

/** The SDK's JSON response handler's failure: a 2xx reply that is not a Responses object. */
function invalidResponse(facts: CallFacts & { status: number; text: string }, cause?: unknown): APICallError {
  return new APICallError({
    message: 'Invalid JSON response',
    cause,
    url: facts.url,
    requestBodyValues: facts.body,
    statusCode: facts.status,
    responseHeaders: facts.headers,
    responseBody: facts.text,
  });
}

interface CallFacts {
  url: string;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /** The function tools the call offered. */
  functionNames?: ReadonlySet<string>;
}

/** A non-2xx reply (or a 2xx that is not an event stream), as the SDK's failed-response handler reports it. */
function failedCall(input: CallFacts & { status: number; text: string }): APICallError {
  let message: string | undefined;
  let data: unknown;
  try {
    data = JSON.parse(input.text);
    const error = (data as { error?: { message?: unknown } } | null)?.error;
    if (typeof error?.message === 'string') message = error.message;
  } catch {
    data = undefined;
  }
  const ok = input.status >= 200 && input.status < 300;
  return new APICallError({
    message: message ?? (ok ? 'Invalid content type: expected text/event-stream.' : `HTTP ${input.status}`),
    url: input.url,
    requestBodyValues: input.body,
    statusCode: input.status,
    responseHeaders: input.headers,
    responseBody: input.text,
    data,
  });
}

type Frame = Record<string, unknown> & { type?: unknown };

async function* readParts(body: AsyncIterable<string>, facts: CallFacts): AsyncGenerator<LanguageModelV3StreamPart> {
  let finishReason: LanguageModelV3FinishReason = { unified: 'other', raw: undefined };
  let usage: Frame | undefined;
  let finished = false;
  let output = false;
  let failed = false;
  let hasFunctionCall = false;
  let hasRefusal = false;

  for await (const data of sseData(body)) {
    let frame: Frame;
    try {
      frame = JSON.parse(data) as Frame;
    } catch (cause) {
      throw new JSONParseError({ text: data, cause });
    }
    if (typeof frame !== 'object' || frame === null || typeof frame.type !== 'string') throw malformedFrame(data);
    const type = frame.type;
    // As the SDK counts it: an error before any other response event is a failed call (retryable), after one a stream error.
    if (!output && type !== 'response.created' && type !== 'response.failed' && type.startsWith('response.'))
      output = true;
    if (type === 'response.output_text.delta' || type === 'response.refusal.delta') {
      if (typeof frame.delta !== 'string') throw malformedFrame(data);
      if (type === 'response.refusal.delta') hasRefusal = true;
      yield { type: 'text-delta', id: String(frame.item_id ?? ''), delta: frame.delta };
    } else if (type === 'response.output_item.done') {
      const item = frame.item as Frame | undefined;
      if (item?.type === 'function_call') {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.arguments !== 'string')
          throw malformedFrame(data);
        hasFunctionCall = true;
        const call = {
          type: 'tool-call' as const,
          toolCallId: item.call_id,
          toolName: item.name,
          input: item.arguments,
        };
        yield* expandParallelCall(call, facts.functionNames) ?? [call];
      }
    } else if (type === 'response.refusal.done') {
      hasRefusal = true;
    } else if (type === 'response.completed' || type === 'response.incomplete') {
      const response = (frame.response ?? {}) as Frame;
      const reason = (response.incomplete_details as Frame | null | undefined)?.reason;
      if (!failed) {
        finishReason = {
          unified: mapFinishReason(reason, hasFunctionCall, hasRefusal),
          raw: typeof reason === 'string' ? reason : undefined,
        };
      }
      usage = (response.usage ?? undefined) as Frame | undefined;
      finished = true;
    } else if (type === 'response.failed') {
      const response = (frame.response ?? {}) as Frame;
      const reason = (response.incomplete_details as Frame | null | undefined)?.reason;
      finishReason = {
        unified: typeof reason === 'string' ? mapFinishReason(reason, hasFunctionCall, false) : 'error',
        raw: typeof reason === 'string' ? reason : 'error',
      };
      usage = (response.usage ?? undefined) as Frame | undefined;
      finished = true;
      if (!failed && response.error != null) {
        failed = true;
        const error = {
          type: 'response.failed',
          sequence_number: frame.sequence_number,
          response: { error: response.error, incomplete_details: response.incomplete_details },
        };
        if (!output) throw streamErrorBeforeOutput(error, facts);
        yield { type: 'error', error: streamError(error) ?? error };
      }
    } else if (type === 'error') {
      if (!output) throw streamErrorBeforeOutput(frame, facts);
      failed = true;
      finishReason = { unified: 'error', raw: 'error' };
      yield { type: 'error', error: streamError(frame) ?? frame };
    }
  }
  if (finished) yield { type: 'finish', finishReason, usage: toUsage(usage) };
}

type ToolCallPart = Extract<LanguageModelV3StreamPart, { type: 'tool-call' }>;

/**
 * The SDK's expandParallelToolCall: a model that calls an undeclared `parallel` tool with
 * `{tool_uses: [{recipient_name: "functions.<name>", parameters}]}` meant those declared functions, one call
 * each (ids `<call id>_<index>`). Anything else in that shape stays one call, as the SDK leaves it.
 */
function expandParallelCall(
  call: ToolCallPart,
  functionNames: ReadonlySet<string> = new Set(),
): ToolCallPart[] | undefined {
  if (call.toolName !== 'parallel' || functionNames.has('parallel')) return undefined;
  let input: unknown;
  try {
    input = JSON.parse(call.input);
  } catch {
    return undefined;
  }
  const uses = isJsonObject(input) ? input.tool_uses : undefined;
  if (!Array.isArray(uses) || uses.length === 0) return undefined;
  const calls: ToolCallPart[] = [];
  for (const [index, use] of uses.entries()) {
    if (!isJsonObject(use)) return undefined;
    const recipient = use.recipient_name;
    if (typeof recipient !== 'string' || !recipient.startsWith('functions.') || !isJsonObject(use.parameters))
      return undefined;
    const name = recipient.slice('functions.'.length);
    if (!functionNames.has(name)) return undefined;
    calls.push({
      type: 'tool-call',
      toolCallId: `${call.toolCallId}_${index}`,
      toolName: name,
      input: JSON.stringify(use.parameters),
    });
  }
  return calls;
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function malformedFrame(data: string): Error {
  return new TypeValidationError({
    value: data,
    cause: new Error('The event is not a Responses API event of the expected shape.'),
  });
}

/** The SDK's mapOpenAIResponseFinishReason. */
function mapFinishReason(
  reason: unknown,
  hasFunctionCall: boolean,
  hasRefusal: boolean,
): LanguageModelV3FinishReason['unified'] {
  switch (reason) {
    case undefined:
    case null:
      if (hasFunctionCall) return 'tool-calls';
      return hasRefusal ? 'content-filter' : 'stop';
    case 'max_output_tokens':
      return 'length';
    case 'content_filter':
      return 'content-filter';
    default:
      return hasFunctionCall ? 'tool-calls' : 'other';
  }
}

function toUsage(usage: Frame | undefined): LanguageModelV3Usage {
  const input = typeof usage?.input_tokens === 'number' ? usage.input_tokens : undefined;
  const output = typeof usage?.output_tokens === 'number' ? usage.output_tokens : undefined;
  const cached = (usage?.input_tokens_details as Frame | undefined)?.cached_tokens;
  const reasoning = (usage?.output_tokens_details as Frame | undefined)?.reasoning_tokens;
  const cacheRead = typeof cached === 'number' ? cached : 0;
  const reasoningTokens = typeof reasoning === 'number' ? reasoning : 0;
  return {
    inputTokens: {
      total: input,
      noCache: input === undefined ? undefined : input - cacheRead,
      cacheRead: input === undefined ? undefined : cacheRead,
      cacheWrite: undefined,
    },
    outputTokens: {
      total: output,
      text: output === undefined ? undefined : output - reasoningTokens,
      reasoning: output === undefined ? undefined : reasoningTokens,
    },
  };
}

interface StreamErrorDetail {
  message: string;
  code?: string | number;
  type?: string;
}

/** The SDK's parseStreamError: the message, code and type of an `error` frame or a `response.failed` frame's error. */
function parseStreamError(frame: Frame): StreamErrorDetail | undefined {
  if (frame.type === 'response.failed') {
    const error = (frame.response as Frame | undefined)?.error as Frame | undefined;
    return typeof error?.message === 'string'
      ? { message: error.message, code: codeOf(error.code), type: 'response.failed' }
      : undefined;
  }
  const nested = typeof frame.error === 'object' && frame.error !== null ? (frame.error as Frame) : undefined;
  const error = nested ?? frame;
  if (typeof error.message !== 'string') return undefined;
  if (!(nested || typeof error.type === 'string' || 'code' in error || 'param' in error)) return undefined;
  return {
    message: error.message,
    code: codeOf(error.code),
    type: typeof error.type === 'string' ? error.type : undefined,
  };
}

function codeOf(value: unknown): string | number | undefined {
  return typeof value === 'string' || typeof value === 'number' ? value : undefined;
}

/** The SDK's getStatusCode: the HTTP status an error frame stands for, from its code or else its code and type's words. */
function statusOf(error: StreamErrorDetail): number {
  const code = typeof error.code === 'string' && /^\d{3}$/.test(error.code) ? Number(error.code) : error.code;
  if (typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599) return code;
  const words = [error.code, error.type]
    .filter((value) => value !== undefined)
    .join(' ')
    .toLowerCase();
  if (words.includes('insufficient_quota') || words.includes('rate_limit')) return 429;
  if (words.includes('authentication')) return 401;
  if (words.includes('permission')) return 403;
  if (words.includes('not_found')) return 404;
  if (words.includes('invalid') || words.includes('bad_request') || words.includes('context_length')) return 400;
  if (words.includes('overload')) return 503;
  if (words.includes('timeout')) return 504;
  return 500;
}

/** The SDK's createOpenAIProviderStreamError: an error after output, with the HTTP status the frame implies. */
function streamError(frame: Frame): Record<string, unknown> | undefined {
  const error = parseStreamError(frame);
  if (!error) return undefined;
  return { message: error.message, type: error.type, code: error.code, statusCode: statusOf(error), data: frame };
}

/** The SDK's createOpenAIStreamError: an error frame before any output is thrown as a (retryable) failed call. */
function streamErrorBeforeOutput(frame: Frame, facts: CallFacts): APICallError {
  const error = parseStreamError(frame);
  const status = error ? statusOf(error) : 500;
  return new APICallError({
    message: error?.message ?? 'OpenAI stream failed before any output was generated',
    url: facts.url,
    requestBodyValues: facts.body,
    statusCode: status,
    responseHeaders: facts.headers,
    responseBody: JSON.stringify(frame),
    data: frame,
  });
}

/**
 * The `data` of each server-sent event, in order (WHATWG event-stream rules: lines end in LF, CRLF or CR; a
 * blank line dispatches; several `data` lines join with LF; comments and other fields are skipped).
 */
export async function* sseData(body: AsyncIterable<string>): AsyncGenerator<string> {
  let buffer = '';
  let data: string | undefined;
  for await (const chunk of body) {
    buffer = buffer.length === 0 ? chunk : buffer + chunk;
    let start = 0;
    // The next CR, found once per chunk and again only once passed: searching the rest of a large chunk for a CR
    // at every line would scan it once per line (OpenAI ends lines with LF alone).
    let cr = buffer.indexOf('\r');
    for (;;) {
      let end = buffer.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = buffer.indexOf('\r', start);
      if (cr !== -1 && (end === -1 || cr < end)) {
        // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
        if (cr === buffer.length - 1) break;
        end = cr;
      }
      if (end === -1) break;
      const line = buffer.slice(start, end);
      start = end + (buffer.charCodeAt(end) === 13 && buffer.charCodeAt(end + 1) === 10 ? 2 : 1);
      if (line.length === 0) {
        if (data !== undefined) yield data;
        data = undefined;
      } else if (line.startsWith('data:') || line === 'data') {
        const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
        data = data === undefined ? value : `${data}\n${value}`;
      }
    }
    buffer = start === 0 ? buffer : buffer.slice(start);
  }
  // A last event without its blank line is dropped, as the event-stream rules say.
}
