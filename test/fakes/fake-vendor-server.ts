import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import {
  DEFAULT_EMBEDDING,
  DEFAULT_REPLY_TEXT,
  DEFAULT_USAGE,
  type FakeScript,
  type RecordedRequest,
} from './fake-script';

/**
 * The vendor-independent half of every fake: a loopback node:http server that records requests, plays
 * the scripted step for each one and injects faults. A `VendorProtocol` supplies the wire format.
 */

export interface SseEvent {
  /** The `event:` line (OpenAI Responses and Anthropic name their events; Chat Completions and Gemini do not). */
  event?: string;
  /** Already serialised `data:` payload. */
  data: string;
  /** Counts toward dropAfterDeltas / hangAfterDeltas. */
  textDelta?: boolean;
}

export type VendorReply =
  | { kind: 'json'; body: unknown }
  /** Bytes as they are (speech audio). */
  | { kind: 'binary'; contentType: string; body: Buffer }
  | { kind: 'sse'; events: SseEvent[]; lineEnd?: '\n' | '\r\n' };

export interface VendorProtocol {
  /** Path prefix to hand the SDK as its base URL: `/v1`, `/v1beta`. */
  basePath: string;
  /** Response header carrying the vendor's request id, if the vendor sends one. */
  requestIdHeader?: string;
  /** Whether a request asks for a stream; must work on the raw body (zero-latency mode does not parse it). */
  isStream(path: string, rawBody: Buffer): boolean;
  /** The reply for a known endpoint, or undefined for an unknown path (answered 404). */
  reply(request: RecordedRequest, step: ResolvedStep, ids: IdSource): VendorReply | undefined;
  /** The vendor's error body for a status. */
  errorBody(status: number, message: string | undefined, request: RecordedRequest): unknown;
  /** How many events open a stream before the first content (where malformed SSE is injected). */
  openingEvents: number;
  /** The vendor's in-stream error event, for vendors that have one. */
  streamErrorEvent?(request: RecordedRequest): SseEvent;
}

/** A script step with defaults applied and tool-call arguments serialised. */
export interface ResolvedStep {
  text: string | undefined;
  textChunks: string[];
  toolCalls: Array<{ name: string; arguments: string; callId: string | undefined }>;
  finishReason: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  usage: { inputTokens: number; outputTokens: number };
  embedding: number[];
}

export interface IdSource {
  /** `prefix` + a per-server counter, e.g. `resp_fake000003`. */
  next(prefix: string): string;
}

export interface FakeVendorServer {
  /** Origin of the server, e.g. `http://127.0.0.1:43121`. */
  readonly url: string;
  /** What to pass as the adapter's `baseURL` (`url` + the vendor's path prefix). */
  readonly baseURL: string;
  /** Every request received, in order (not recorded in zero-latency mode). */
  readonly requests: RecordedRequest[];
  /** Requests received, also counted in zero-latency mode. */
  readonly requestCount: number;
  /** Queue steps: each request takes the next one; when the queue is empty the default step is used. */
  script(...steps: FakeScript[]): void;
  /** Replace the step used when the queue is empty (initially `{}`: the default reply). */
  setDefault(step: FakeScript): void;
  /** Resolves once `count` requests were received (rejects after timeoutMs). */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves once the client closed request `index` before its answer was complete. */
  waitForClientAbort(index: number, timeoutMs?: number): Promise<void>;
  /** Forget recorded requests and queued steps. */
  reset(): void;
  close(): Promise<void>;
}

export interface FakeServerOptions {
  /**
   * Benchmark mode: scripts, faults and recording are off and every request gets a fixed small reply
   * prepared once (one buffer per endpoint and stream flag).
   */
  zeroLatency?: boolean;
}

export async function startFakeVendorServer(
  protocol: VendorProtocol,
  options: FakeServerOptions = {},
): Promise<FakeVendorServer> {
  const requests: RecordedRequest[] = [];
  const queue: FakeScript[] = [];
  let defaultStep: FakeScript = {};
  let requestCount = 0;
  let idCounter = 0;
  const ids: IdSource = { next: (prefix) => `${prefix}fake${String(++idCounter).padStart(6, '0')}` };
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of [...listeners]) listener();
  };
  const sockets = new Set<Socket>();
  const zeroLatencyReplies = new Map<string, { status: number; contentType: string; body: Buffer }>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requestCount += 1;
      const rawBody = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (options.zeroLatency) {
        answerZeroLatency(req, res, rawBody);
        return;
      }
      void answer(req, res, rawBody).catch((error: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`fake vendor failed: ${String(error)}`);
        } else {
          res.destroy();
        }
      });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function answer(req: IncomingMessage, res: ServerResponse, rawBody: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const rawText = rawBody.toString('utf8');
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: flattenHeaders(req.headers),
      body: parseJson(rawText),
      rawBody: rawText,
      stream: protocol.isStream(url.pathname, rawBody),
      receivedAt: performance.now(),
      clientAborted: false,
    };
    requests.push(record);
    let droppedByUs = false;
    res.on('close', () => {
      if (!res.writableFinished && !droppedByUs) {
        record.clientAborted = true;
        notify();
      }
    });
    notify();

    const step = queue.shift() ?? defaultStep;
    const drop = () => {
      droppedByUs = true;
      req.socket.destroy();
    };
    if (step.resetConnection) return drop();
    if (step.delayMs) await delay(step.delayMs);
    if (step.hang || res.destroyed) return;

    const headers: Record<string, string> = { ...step.headers };
    if (protocol.requestIdHeader) headers[protocol.requestIdHeader] = ids.next('req_');

    if (step.status !== undefined) {
      if (step.retryAfter !== undefined) headers['retry-after'] = step.retryAfter;
      if (step.retryAfterMs !== undefined) headers['retry-after-ms'] = String(step.retryAfterMs);
      return sendJson(res, step.status, headers, protocol.errorBody(step.status, step.errorMessage, record));
    }
    if (step.malformedBody && !record.stream) {
      res.writeHead(200, { ...headers, 'content-type': 'application/json' });
      res.end('{"id": "broken", "output": [{"type": "message", "content": ');
      return;
    }

    const reply = protocol.reply(record, resolveStep(step), ids);
    if (!reply) {
      return sendJson(res, 404, headers, protocol.errorBody(404, `Unknown path ${record.path}`, record));
    }
    if (reply.kind === 'json') return sendJson(res, 200, headers, reply.body);
    if (reply.kind === 'binary') {
      res.writeHead(200, {
        ...headers,
        'content-type': reply.contentType,
        'content-length': String(reply.body.length),
      });
      res.end(reply.body);
      return;
    }

    res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const lineEnd = reply.lineEnd ?? '\n';
    let deltas = 0;
    const endWithErrorEvent = () => {
      const errorEvent = protocol.streamErrorEvent?.(record);
      res.end(errorEvent ? serialiseEvent(errorEvent, lineEnd) : undefined);
    };
    for (const [index, event] of reply.events.entries()) {
      if (res.destroyed) return;
      if (step.malformedSse && index === protocol.openingEvents) {
        res.end(`data: {"type": "content", "delta": "Hel${lineEnd}${lineEnd}`);
        return;
      }
      if (step.errorEventAfterDeltas === 0 && index === protocol.openingEvents) return endWithErrorEvent();
      if (step.chunkDelayMs && index > 0) await delay(step.chunkDelayMs);
      if (res.destroyed) return;
      res.write(serialiseEvent(event, lineEnd));
      if (event.textDelta && step.endless) return streamForever(res, serialiseEvent(event, lineEnd));
      if (event.textDelta) {
        deltas += 1;
        if (step.dropAfterDeltas !== undefined && deltas >= step.dropAfterDeltas) {
          // Let the written bytes leave before the socket goes, as a real connection loss would.
          await new Promise<void>((resolve) => res.write('', () => resolve()));
          return drop();
        }
        if (step.hangAfterDeltas !== undefined && deltas >= step.hangAfterDeltas) return;
        if (step.errorEventAfterDeltas !== undefined && deltas >= step.errorEventAfterDeltas)
          return endWithErrorEvent();
      }
    }
    res.end();
  }

  /** A vendor that never stops: `chunk` again and again, with backpressure, until the client closes the connection. */
  async function streamForever(res: ServerResponse, chunk: string): Promise<void> {
    while (!res.destroyed) {
      if (!res.write(chunk))
        await new Promise<void>((resolve) => {
          res.once('drain', resolve);
          res.once('close', resolve);
        });
      else await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  function answerZeroLatency(req: IncomingMessage, res: ServerResponse, rawBody: Buffer): void {
    const path = (req.url ?? '/').split('?')[0]!;
    const stream = protocol.isStream(path, rawBody);
    const key = `${stream ? 's' : 'j'} ${path}`;
    let prepared = zeroLatencyReplies.get(key);
    if (!prepared) {
      const record: RecordedRequest = {
        method: req.method ?? 'POST',
        path,
        query: {},
        headers: {},
        body: parseJson(rawBody.toString('utf8')),
        rawBody: '',
        stream,
        receivedAt: 0,
        clientAborted: false,
      };
      const reply = protocol.reply(
        record,
        resolveStep({ text: 'ok', usage: { inputTokens: 5, outputTokens: 1 } }),
        ids,
      );
      prepared = !reply
        ? {
            status: 404,
            contentType: 'application/json',
            body: Buffer.from(JSON.stringify(protocol.errorBody(404, undefined, record))),
          }
        : reply.kind === 'json'
          ? { status: 200, contentType: 'application/json', body: Buffer.from(JSON.stringify(reply.body)) }
          : reply.kind === 'binary'
            ? { status: 200, contentType: reply.contentType, body: reply.body }
            : {
                status: 200,
                contentType: 'text/event-stream',
                body: Buffer.from(reply.events.map((event) => serialiseEvent(event, reply.lineEnd ?? '\n')).join('')),
              };
      zeroLatencyReplies.set(key, prepared);
    }
    res.writeHead(prepared.status, { 'content-type': prepared.contentType, 'content-length': prepared.body.length });
    res.end(prepared.body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const listener = () => {
        if (!predicate()) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`fake vendor: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        listeners.delete(listener);
      };
      listeners.add(listener);
    });
  }

  return {
    url: origin,
    baseURL: `${origin}${protocol.basePath}`,
    requests,
    get requestCount() {
      return requestCount;
    },
    script: (...steps) => {
      queue.push(...steps);
    },
    setDefault: (step) => {
      defaultStep = step;
    },
    waitForRequests: (count, timeoutMs = 5_000) =>
      waitFor(() => requests.length >= count, timeoutMs, `${count} request(s)`),
    waitForClientAbort: (index, timeoutMs = 5_000) =>
      waitFor(() => requests[index]?.clientAborted === true, timeoutMs, `the client to close request ${index}`),
    reset: () => {
      requests.length = 0;
      queue.length = 0;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function resolveStep(step: FakeScript): ResolvedStep {
  const toolCalls = (step.toolCalls ?? []).map((call) => ({
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    callId: call.callId,
  }));
  const text = step.text ?? (toolCalls.length === 0 ? DEFAULT_REPLY_TEXT : undefined);
  return {
    text,
    textChunks: step.textChunks ?? (text ? (text.match(/\s*\S+\s*$|\s*\S+/g) ?? [text]) : []),
    toolCalls,
    finishReason: step.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: step.usage ?? DEFAULT_USAGE,
    embedding: step.embedding ?? DEFAULT_EMBEDDING,
  };
}

/** Splits a JSON text in two, so tool arguments arrive as more than one delta. */
export function splitInTwo(text: string): string[] {
  if (text.length < 2) return [text];
  const middle = Math.floor(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)];
}

function serialiseEvent(event: SseEvent, lineEnd: string): string {
  return `${event.event ? `event: ${event.event}${lineEnd}` : ''}data: ${event.data}${lineEnd}${lineEnd}`;
}

function sendJson(res: ServerResponse, status: number, headers: Record<string, string>, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function flattenHeaders(headers: IncomingMessage['headers']): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) result[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return result;
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Reads a bearer token / API key header, for vendor error texts that quote the rejected key. */
export function presentedKey(request: RecordedRequest): string {
  const authorization = request.headers.authorization ?? '';
  return (
    authorization.replace(/^Bearer\s+/i, '') || request.headers['x-api-key'] || request.headers['x-goog-api-key'] || ''
  );
}
