/**
 * The provider port: what the rest of the service needs from a model vendor. It never imports a vendor
 * type; adapters (one folder per vendor family) translate to and from it at the edge.
 */

export type PromptItem =
  | { type: 'message'; role: 'system' | 'user' | 'assistant'; text: string }
  | { type: 'function_call'; callId: string; name: string; arguments: string }
  | { type: 'function_call_output'; callId: string; name?: string; output: string };

export interface FunctionTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; name: string };

/**
 * A tool the vendor runs itself (its calls and results stay at the vendor; the model answers with what they gave):
 * file search over the vendor's own stores (OpenAI's vector stores, Gemini's file search stores) and code
 * execution in the vendor's sandbox (OpenAI's code interpreter, Anthropic's and Gemini's code execution).
 */
export type ServerTool =
  | { type: 'file_search'; storeIds: string[]; maxResults?: number }
  | { type: 'code_interpreter'; container?: string; fileIds?: string[] };

export type ServerToolType = ServerTool['type'];

/** The server tools a vendor runs: file search; code execution, in a container of the caller's choosing or not. */
export interface ServerToolSupport {
  file_search?: true;
  code_interpreter?: { containers: boolean };
}

export interface GenerateTextRequest {
  /** The vendor's own model id (catalog `upstream_id`). */
  model: string;
  instructions?: string;
  items: PromptItem[];
  tools?: FunctionTool[];
  /** Tools the vendor runs (only those in the model's `serverTools`). */
  serverTools?: ServerTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  temperature?: number;
  topP?: number;
  maxOutputTokens?: number;
  reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high';
  verbosity?: 'low' | 'medium' | 'high';
  /** Structured output: the reply is JSON, matching `schema` when one is given (models with `structured_outputs`). */
  responseFormat?: ResponseFormat;
  /** Aborting it cancels the upstream request. */
  signal?: AbortSignal;
  /**
   * The assistant's reply so far, which the model is to continue (a generation whose process died after part of it
   * was streamed): sent as a trailing assistant message, the vendor's "prefill". Only for a model whose
   * `continuesReplies` is true; the reply streamed is the continuation alone.
   */
  continueFrom?: string;
  /**
   * Retries of this call before it fails, instead of the adapter's setting: 0 for a route's target that has another
   * target after it (the next vendor is the retry, api-decisions 32).
   */
  maxRetries?: number;
}

export interface ResponseFormat {
  type: 'json';
  /** JSON Schema of the reply; without one, any JSON object. */
  schema?: Record<string, unknown>;
  name?: string;
  description?: string;
  /** Whether the vendor must follow the schema exactly (OpenAI's strict mode); the vendor's default when unset. */
  strict?: boolean;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'other';

export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
}

export interface ToolCall {
  callId: string;
  name: string;
  /** JSON text, as the vendor produced it. */
  arguments: string;
}

export interface GenerateTextResult {
  text: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: TokenCounts;
}

export type TextStreamPart =
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call'; callId: string; name: string; arguments: string }
  | { type: 'finish'; finishReason: FinishReason; usage: TokenCounts };

export interface LanguageModel {
  /**
   * Whether the vendor continues an assistant reply it is given (`continueFrom`) instead of answering anew:
   * Anthropic's Messages API (prefill) and the dev vendor do; OpenAI's APIs and Gemini do not promise it.
   */
  readonly continuesReplies?: boolean;
  /** The server tools this vendor runs (none when absent); a request with another is the caller's to refuse. */
  readonly serverTools?: ServerToolSupport;
  generateText(request: GenerateTextRequest): Promise<GenerateTextResult>;
  /** Parts in order; exactly one `finish` part last. Throws ProviderError on failure. */
  streamText(request: GenerateTextRequest): AsyncIterable<TextStreamPart>;
}

export interface EmbedRequest {
  model: string;
  input: string;
  signal?: AbortSignal;
  /** Retries instead of the adapter's setting (a route's target with another after it: 0, api-decisions 32). */
  maxRetries?: number;
}

export interface EmbeddingModel {
  embed(request: EmbedRequest): Promise<{ embedding: number[]; usage: { inputTokens: number } }>;
}

/** Container formats the service accepts for transcription, found in the content (src/audio/audio-format.ts). */
export type AudioFormat = 'wav' | 'mp3' | 'flac' | 'ogg' | 'mp4' | 'webm' | 'mpeg';

/** An uploaded audio file: its format and size, and its bytes as a stream (read it as often as needed, never whole). */
export interface AudioInput {
  format: AudioFormat;
  /** The media type of `format` (`audio/wav`, `audio/mpeg`, ...). */
  mediaType: string;
  filename: string;
  size: number;
  read(): AsyncIterable<Uint8Array>;
}

export interface TranscribeRequest {
  model: string;
  audio: AudioInput;
  /** ISO 639-1; absent: the vendor decides. */
  language?: string;
  prompt?: string;
  beamSize?: number;
  /** Sampling temperature, for vendors that sample (OpenAI's); models that do not sample have nothing to apply it to. */
  temperature?: number;
  signal?: AbortSignal;
  /** Retries instead of the adapter's setting (a route's target with another after it: 0, api-decisions 32). */
  maxRetries?: number;
}

export interface TranscriptionSegment {
  text: string;
  /** Seconds from the start of the file. */
  start: number;
  end: number;
  speakerId: string | null;
}

export interface TranscriptionResult {
  text: string;
  language: string | null;
  /** The audio's duration in seconds: what a transcription is billed by. */
  durationSeconds: number;
  segments: TranscriptionSegment[];
  /** What the model wants the client to know about this result (the dev models: that they recognise no words). */
  notice?: string;
}

export interface TranscriptionModel {
  transcribe(request: TranscribeRequest): Promise<TranscriptionResult>;
}

/**
 * What speech can be rendered as: MP3; WAV (16-bit PCM in its container); raw 16-bit little-endian mono PCM at
 * 24 kHz (OpenAI's `pcm`).
 */
export const SPEECH_FORMATS = { mp3: 'audio/mpeg', wav: 'audio/wav', pcm: 'audio/pcm' } as const;
export type SpeechFormat = keyof typeof SPEECH_FORMATS;

export interface SpeechRequest {
  model: string;
  voice: string;
  text: string;
  /** Absent: mp3. */
  format?: SpeechFormat;
  /** How fast, 1 the model's normal speed; absent: 1. A model that cannot honour it refuses (bad_request). */
  speed?: number;
  signal?: AbortSignal;
  /** Retries instead of the adapter's setting (a route's target with another after it: 0, api-decisions 32). */
  maxRetries?: number;
}

export interface SpeechResult {
  mediaType: (typeof SPEECH_FORMATS)[SpeechFormat];
  /** The MP3, in pieces as the vendor produces them (one piece when the vendor answers whole). */
  audio: AsyncIterable<Uint8Array>;
}

export interface SpeechModel {
  /** Resolves once the vendor has accepted the text (a refusal is an error, not a broken stream). */
  synthesize(request: SpeechRequest): Promise<SpeechResult>;
}

export type ProviderErrorKind =
  'auth' | 'rate_limit' | 'bad_request' | 'not_found' | 'server' | 'timeout' | 'network' | 'malformed' | 'cancelled';

const marker = Symbol.for('switchyard.ProviderError');

/** A vendor failure, classified once at the adapter edge. */
export class ProviderError extends Error {
  override readonly name = 'ProviderError';
  readonly [marker] = true;
  readonly vendor: string;
  readonly kind: ProviderErrorKind;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly vendorRequestId?: string;

  constructor(input: {
    vendor: string;
    kind: ProviderErrorKind;
    message: string;
    status?: number;
    retryAfterMs?: number;
    vendorRequestId?: string;
    cause?: unknown;
  }) {
    super(input.message, { cause: input.cause });
    this.vendor = input.vendor;
    this.kind = input.kind;
    this.status = input.status;
    this.retryAfterMs = input.retryAfterMs;
    this.vendorRequestId = input.vendorRequestId;
  }

  /** 408/409/429/5xx, timeouts and dropped connections may succeed on a later attempt. */
  get isRetryable(): boolean {
    return ['rate_limit', 'server', 'timeout', 'network'].includes(this.kind);
  }

  static isInstance(value: unknown): value is ProviderError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

/** What one vendor adapter offers; a vendor without embeddings leaves `embeddingModel` out. */
export interface VendorProvider {
  languageModel?: LanguageModel;
  embeddingModel?: EmbeddingModel;
  speechModel?: SpeechModel;
  transcriptionModel?: TranscriptionModel;
}

/** Settings every HTTP adapter takes (dependencies passed in, no module singletons). */
export interface VendorAdapterOptions {
  /** Catalog vendor code, used in error messages and ProviderError.vendor. */
  vendor: string;
  apiKey?: string;
  baseURL?: string;
  /** Overall timeout of one upstream call (ms). */
  timeoutMs: number;
  /** Retries on 429/5xx/network errors before any output was produced. */
  maxRetries: number;
  /** Bytes one reply (a whole event stream included) may have, counted as it is read; default 64 MiB. */
  maxStreamBytes?: number;
  /** By default the shared keep-alive vendor fetch (shared/vendor-fetch.ts, vendorFetchFor). */
  fetch?: typeof globalThis.fetch;
}
