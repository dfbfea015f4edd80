import { createHash, randomBytes } from 'node:crypto';
import {
  ProviderError,
  type EmbeddingModel,
  type GenerateTextRequest,
  type GenerateTextResult,
  type LanguageModel,
  type ProviderErrorKind,
  type SpeechModel,
  type TextStreamPart,
  type ToolCall,
  type TranscriptionModel,
  type VendorProvider,
} from '../provider';
import { createDevSpeechModel } from './audio/dev-speech';
import { createDevTranscriptionModel } from './audio/dev-transcription';

/**
 * The built-in `dev` vendor (docs/api-decisions.md "The built-in dev vendor"): no keys, no network, deterministic.
 *
 * dev-echo replies with the text of the latest user message. Tokens are whitespace-separated words:
 * input tokens are every word sent (instructions; message texts; function call names and arguments;
 * function call outputs), output tokens the words produced (for a tool call: its name and arguments).
 * The latest user message may start with a directive:
 *   /delay MS rest   stream `rest` word by word, MS ms between words; `rest` may itself be a directive
 *                    (`/delay 50 /words 200`), for /call and /error the delay comes first
 *   /call NAME JSON  one tool call of NAME with JSON (verbatim, `{}` when absent); finish `tool_calls`
 *   /words N         reply `w1 w2 ... wN`
 *   /error [KIND]    fail with ProviderError of KIND (default `server`)
 * With structured output (`responseFormat`), a reply that is not JSON is replaced by the smallest value of the
 * requested schema (`{}` without one), so a client's JSON parsing and schema checks can be exercised offline.
 * When the latest item is a function_call_output the reply is `Tool NAME returned: OUTPUT`, so a
 * function-call round trip completes. Steps joined by ` /then ` (`/call a {} /then /call b {}`) are taken
 * one per tool result since the user message, so a tool loop can run several rounds. Stream deltas are each word with the whitespace before it, so a reply keeps its spaces, tabs and newlines; the request's tool_choice is honoured (honourToolChoice).
 *
 * dev-embed: 256-dimension unit vectors by feature hashing of lower-cased words.
 *
 * dev-tts, dev-stt and dev-stt-async: real speech synthesis and audio analysis, offline (audio/).
 */
export const DEV_ECHO = 'dev-echo';
export const DEV_EMBED = 'dev-embed';
export const DEV_EMBEDDING_DIMENSIONS = 256;
export const DEV_TTS = 'dev-tts';
export const DEV_STT = 'dev-stt';
export const DEV_STT_ASYNC = 'dev-stt-async';

const MAX_DELAY_MS = 60_000;
const MAX_WORDS = 100_000;
const ERROR_KINDS: readonly ProviderErrorKind[] = [
  'auth',
  'rate_limit',
  'bad_request',
  'not_found',
  'server',
  'timeout',
  'network',
  'malformed',
  'cancelled',
];

export function createDevProvider(options: { vendor?: string } = {}): VendorProvider {
  const vendor = options.vendor ?? 'dev';
  const fail = (kind: ProviderErrorKind, message: string, cause?: unknown) =>
    new ProviderError({ vendor, kind, message, cause });
  const cancelled = (signal: AbortSignal) => fail('cancelled', 'The dev vendor call was cancelled.', signal.reason);
  const throwIfAborted = (signal?: AbortSignal) => {
    if (signal?.aborted) throw cancelled(signal);
  };

  const sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(cancelled(signal));
      const onAbort = () => {
        clearTimeout(timer);
        reject(cancelled(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });

  type Plan =
    | { kind: 'text'; pieces: string[]; delayMs: number }
    | { kind: 'call'; name: string; arguments: string; delayMs: number }
    | { kind: 'error'; errorKind: ProviderErrorKind; delayMs: number };

  function planReply(request: GenerateTextRequest): Plan {
    let userIndex = request.items.length - 1;
    while (
      userIndex >= 0 &&
      !(request.items[userIndex]!.type === 'message' && (request.items[userIndex] as { role: string }).role === 'user')
    )
      userIndex--;
    const user = request.items[userIndex] as { text: string } | undefined;
    // `/call A {..} /then /call B {..}`: each tool result since the user message moves on to the next step.
    const steps = user ? user.text.split(/\s+\/then\s+/) : [];
    const results = request.items.slice(userIndex + 1).filter((item) => item.type === 'function_call_output').length;
    const last = request.items.at(-1);
    if (last?.type === 'function_call_output') {
      if (results < steps.length) return readDirectives(steps[results]!, 0);
      const call = request.items.find((item) => item.type === 'function_call' && item.callId === last.callId);
      const name = last.name ?? (call?.type === 'function_call' ? call.name : last.callId);
      return { kind: 'text', pieces: pieces(`Tool ${name} returned: ${last.output}`), delayMs: 0 };
    }
    return user ? readDirectives(steps[0]!, 0) : { kind: 'text', pieces: [], delayMs: 0 };
  }

  /**
   * The request's tool_choice, as a vendor honours it: `none` answers a `/call` as text (its directive echoed);
   * `required` turns a text answer into a call of the first tool; `{type: function, name}` calls that function
   * (with the `/call`'s arguments when there was one, else `{}`). `auto` (or none given) leaves the script as is.
   */
  function honourToolChoice(plan: Plan, request: GenerateTextRequest): Plan {
    const choice = request.toolChoice;
    if (plan.kind === 'error' || !choice || choice === 'auto') return plan;
    if (choice === 'none')
      return plan.kind === 'call'
        ? { kind: 'text', pieces: pieces(`/call ${plan.name} ${plan.arguments}`), delayMs: plan.delayMs }
        : plan;
    const name = choice === 'required' ? (plan.kind === 'call' ? plan.name : request.tools?.[0]?.name) : choice.name;
    if (!name) return plan;
    return { kind: 'call', name, arguments: plan.kind === 'call' ? plan.arguments : '{}', delayMs: plan.delayMs };
  }

  function readDirectives(text: string, delayMs: number): Plan {
    const [directive, ...rest] = words(text);
    const restText = () => text.trimStart().slice(directive.length).trimStart();
    switch (directive) {
      case '/delay': {
        const ms = wholeNumber(rest[0], MAX_DELAY_MS, '/delay MS text');
        return readDirectives(restText().slice(rest[0].length).trimStart(), ms);
      }
      case '/call': {
        if (!rest[0]) throw fail('bad_request', 'dev-echo: /call needs a tool name: /call NAME JSON');
        return { kind: 'call', name: rest[0], arguments: restText().slice(rest[0].length).trim() || '{}', delayMs };
      }
      case '/words': {
        const count = wholeNumber(rest[0], MAX_WORDS, '/words N');
        return {
          kind: 'text',
          pieces: Array.from({ length: count }, (_, index) => `${index > 0 ? ' ' : ''}w${index + 1}`),
          delayMs,
        };
      }
      case '/error': {
        const errorKind = (rest[0] ?? 'server') as ProviderErrorKind;
        if (!ERROR_KINDS.includes(errorKind))
          throw fail('bad_request', `dev-echo: /error takes one of ${ERROR_KINDS.join(', ')}`);
        return { kind: 'error', errorKind, delayMs };
      }
      default:
        return { kind: 'text', pieces: pieces(text), delayMs };
    }
  }

  function wholeNumber(value: string | undefined, max: number, usage: string): number {
    if (value === undefined || !/^\d+$/.test(value) || Number(value) > max) {
      throw fail('bad_request', `dev-echo: expected ${usage} with a whole number up to ${max}`);
    }
    return Number(value);
  }

  async function* streamText(request: GenerateTextRequest): AsyncGenerator<TextStreamPart> {
    if (request.model !== DEV_ECHO) throw fail('not_found', `The dev vendor has no language model "${request.model}".`);
    const { signal } = request;
    throwIfAborted(signal);
    const plan = asStructured(honourToolChoice(planReply(request), request), request.responseFormat);
    const inputTokens = countInputWords(request);

    if (plan.kind === 'error') {
      if (plan.delayMs > 0) await sleep(plan.delayMs, signal);
      throw fail(plan.errorKind, `dev-echo: simulated ${plan.errorKind} failure (/error).`);
    }
    if (plan.kind === 'call') {
      if (plan.delayMs > 0) await sleep(plan.delayMs, signal);
      const callId = `call_${randomBytes(12).toString('hex')}`;
      yield { type: 'tool-call', callId, name: plan.name, arguments: plan.arguments };
      const outputTokens = 1 + words(plan.arguments).length;
      yield { type: 'finish', finishReason: 'tool_calls', usage: { inputTokens, outputTokens } };
      return;
    }

    // Continuing a reply (`continueFrom`): the words after the ones it already has, as a vendor's prefill would.
    const already = request.continueFrom ? words(request.continueFrom).length : 0;
    const remaining = plan.pieces.slice(already);
    const limit = request.maxOutputTokens ?? Number.POSITIVE_INFINITY;
    const produced = remaining.slice(0, Math.max(0, limit));
    for (let index = 0; index < produced.length; index++) {
      if (index > 0 && plan.delayMs > 0) await sleep(plan.delayMs, signal);
      throwIfAborted(signal);
      yield { type: 'text-delta', text: produced[index]! };
    }
    const finishReason = produced.length < remaining.length ? 'length' : 'stop';
    yield { type: 'finish', finishReason, usage: { inputTokens, outputTokens: produced.length } };
  }

  const languageModel: LanguageModel = {
    continuesReplies: true,
    streamText,
    async generateText(request): Promise<GenerateTextResult> {
      // The same script as streaming, so delays, limits and cancellation behave identically.
      let text = '';
      const toolCalls: ToolCall[] = [];
      for await (const part of streamText(request)) {
        if (part.type === 'text-delta') text += part.text;
        else if (part.type === 'tool-call')
          toolCalls.push({ callId: part.callId, name: part.name, arguments: part.arguments });
        else return { text, toolCalls, finishReason: part.finishReason, usage: part.usage };
      }
      throw fail('malformed', 'dev-echo: the stream ended without a finish part.');
    },
  };

  const embeddingModel: EmbeddingModel = {
    async embed(request) {
      if (request.model !== DEV_EMBED)
        throw fail('not_found', `The dev vendor has no embedding model "${request.model}".`);
      throwIfAborted(request.signal);
      const tokens = words(request.input);
      if (tokens.length === 0) throw fail('bad_request', 'dev-embed: the input has no words to embed.');
      return { embedding: hashEmbedding(tokens), usage: { inputTokens: tokens.length } };
    },
  };

  const speech = createDevSpeechModel((message) => fail('bad_request', message));
  const speechModel: SpeechModel = {
    async synthesize(request) {
      if (request.model !== DEV_TTS) throw fail('not_found', `The dev vendor has no speech model "${request.model}".`);
      throwIfAborted(request.signal);
      return speech.synthesize(request);
    },
  };

  const transcription = createDevTranscriptionModel((message) => fail('bad_request', message));
  const transcriptionModel: TranscriptionModel = {
    async transcribe(request) {
      if (request.model !== DEV_STT && request.model !== DEV_STT_ASYNC)
        throw fail('not_found', `The dev vendor has no transcription model "${request.model}".`);
      throwIfAborted(request.signal);
      // Like dev-echo's `/delay`: a `prompt` of `/delay MS` waits first (cancellable), a long job for crash tests.
      const delay = /^\/delay (\d+)/.exec(request.prompt ?? '');
      if (delay) await sleep(Math.min(Number(delay[1]), MAX_DELAY_MS), request.signal);
      return transcription.transcribe(request);
    },
  };

  return { languageModel, embeddingModel, speechModel, transcriptionModel };
}

/** A text reply as JSON when structured output was asked for: the echoed text if it is JSON, else the schema's smallest value. */
function asStructured<Plan extends { kind: string }>(plan: Plan, format: GenerateTextRequest['responseFormat']): Plan {
  if (!format || plan.kind !== 'text') return plan;
  const text = (plan as unknown as { pieces: string[] }).pieces.join('');
  try {
    JSON.parse(text);
    return plan;
  } catch {
    return { ...plan, pieces: pieces(JSON.stringify(smallestValue(format.schema ?? { type: 'object' }))) };
  }
}

/** The smallest value a JSON Schema accepts, for the common keywords (const, enum, type, required properties, minItems). */
function smallestValue(schema: Record<string, unknown>): unknown {
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return 'x'.repeat(typeof schema.minLength === 'number' ? schema.minLength : 0);
    case 'number':
    case 'integer':
      return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const count = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const items = (schema.items ?? {}) as Record<string, unknown>;
      return Array.from({ length: count }, () => smallestValue(items));
    }
    default: {
      const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
      return Object.fromEntries(
        required.filter((name) => properties[name]).map((name) => [name, smallestValue(properties[name]!)]),
      );
    }
  }
}

/**
 * A reply's text as its words, each with the whitespace before it (the last also with any after it): the deltas of
 * its stream, one token each, which put together give back the text exactly, spaces, tabs and newlines kept.
 */
export function pieces(text: string): string[] {
  const found = text.match(/\s*\S+/g) ?? [];
  const trailing = /\s+$/.exec(text)?.[0];
  if (found.length > 0 && trailing) found[found.length - 1] += trailing;
  return found;
}

/** Whitespace-separated words: the dev vendor's tokens. */
export function words(text: string): string[] {
  return text.match(/\S+/g) ?? [];
}

function countInputWords(request: GenerateTextRequest): number {
  let count = words(request.instructions ?? '').length + words(request.continueFrom ?? '').length;
  for (const item of request.items) {
    if (item.type === 'message') count += words(item.text).length;
    else if (item.type === 'function_call') count += words(item.name).length + words(item.arguments).length;
    else count += words(item.output).length;
  }
  return count;
}

/**
 * Feature hashing: each lower-cased word (edge punctuation stripped, so "Hello," and "hello" agree) adds 1
 * to one of 256 buckets chosen by its SHA-256. Counts are never negative, so any non-empty input has a
 * non-zero vector and normalises to unit length.
 */
function hashEmbedding(tokens: string[]): number[] {
  const vector = new Array<number>(DEV_EMBEDDING_DIMENSIONS).fill(0);
  for (const token of tokens) {
    const lower = token.toLowerCase();
    const feature = lower.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '') || lower;
    const bucket = createHash('sha256').update(feature).digest().readUInt32BE(0) % DEV_EMBEDDING_DIMENSIONS;
    vector[bucket] += 1;
  }
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  return vector.map((value) => value / norm);
}
