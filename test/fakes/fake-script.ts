/**
 * What a fake vendor replies to one request (`FakeReply`) and how it misbehaves (`FakeFault`).
 * Each request takes the next queued step (`server.script(...)`), or the default step when none is queued.
 */
export interface FakeToolCall {
  name: string;
  /** An object is serialised as JSON; a string is sent exactly as given. */
  arguments: Record<string, unknown> | string;
  /** The vendor's id for the call; generated (`call_…`, `toolu_…`) when left out. Gemini sends none. */
  callId?: string;
}

export interface FakeReply {
  /** Assistant text. Defaults to DEFAULT_REPLY_TEXT when neither text nor toolCalls is given. */
  text?: string;
  /** How the text is split into stream deltas; by default one delta per word (leading space kept). */
  textChunks?: string[];
  toolCalls?: FakeToolCall[];
  /** Defaults to `tool_calls` when toolCalls are given, else `stop`. Mapped to each vendor's own value. */
  finishReason?: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  usage?: { inputTokens: number; outputTokens: number };
  /** Embedding endpoints: the vector returned (default: DEFAULT_EMBEDDING). */
  embedding?: number[];
}

export interface FakeFault {
  /** Wait this long before answering (headers included). */
  delayMs?: number;
  /** Pause between stream events. */
  chunkDelayMs?: number;
  /** Answer with this HTTP status and the vendor's own error body instead of a reply. */
  status?: number;
  /** `Retry-After` header value (seconds or an HTTP date) on the error answer. */
  retryAfter?: string;
  /** `retry-after-ms` header value (OpenAI sends it next to Retry-After). */
  retryAfterMs?: number;
  /** Error message in the vendor's error body (default: the vendor's usual text for the status). */
  errorMessage?: string;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** Never answer; the server records when the client gives up (`waitForClientAbort`). */
  hang?: boolean;
  /** Streams: stop sending (connection left open) after this many text deltas. */
  hangAfterDeltas?: number;
  /** Streams: repeat the first text delta for ever (never finishing), as fast as the client reads, until it goes away. */
  endless?: boolean;
  /** Streams: destroy the socket after this many text deltas. */
  dropAfterDeltas?: number;
  /** Streams: after the opening event(s), send an event whose data is not JSON, then end the stream. */
  malformedSse?: boolean;
  /**
   * Streams: after this many text deltas (0 = right after the opening events), send the vendor's in-stream
   * error event and end the stream (OpenAI `error` / Chat Completions `{error}` chunk, Anthropic
   * `overloaded_error`). Gemini has no such event: there the step just ends the stream.
   */
  errorEventAfterDeltas?: number;
  /** Non-streaming: answer 200 with a body that is not JSON. */
  malformedBody?: boolean;
  /** Destroy the socket as soon as the request arrived, without any answer. */
  resetConnection?: boolean;
}

export type FakeScript = FakeReply & FakeFault;

export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/responses` or `/v1beta/models/gemini-2.5-flash:generateContent`. */
  path: string;
  query: Record<string, string>;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The parsed JSON body (undefined when the body was not JSON). */
  body: any;
  rawBody: string;
  /** Whether the request asked for a stream. */
  stream: boolean;
  /** performance.now() when the request was complete. */
  receivedAt: number;
  /** The client closed the connection before the answer was complete (abort, timeout). */
  clientAborted: boolean;
}

export const DEFAULT_REPLY_TEXT = 'Hello from the fake vendor.';
export const DEFAULT_USAGE = { inputTokens: 12, outputTokens: 7 };
export const DEFAULT_EMBEDDING = [0.0123, -0.0456, 0.0789, -0.1012, 0.1345, -0.1678, 0.1901, -0.2234];
