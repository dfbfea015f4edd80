import { pipeline, Readable, Transform } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import type { VendorAdapterOptions } from '../provider';

/**
 * The `fetch` every HTTP vendor adapter is given: the WHATWG fetch contract the AI SDK expects, over
 * undici's `request` on one keep-alive pool instead of Node's global fetch. Global fetch builds a
 * Request, runs the full fetch algorithm, tees and transfers web streams and wires abort signals for each
 * call, which cost as much CPU as everything else a chat request does besides the database (README,
 * "Benchmarks"). What the SDK relies on is kept:
 *
 * - connection failures reject as `TypeError('fetch failed', {cause})`, exactly as global fetch does, so
 *   the SDK turns them into its retryable "Cannot connect to API" APICallError;
 * - an abort rejects with the signal's reason (an AbortError by default), before or after the headers;
 * - event streams (and replies of unknown length) are handed over as they arrive; other replies are
 *   read whole first, which is what the SDK would do with them anyway.
 *
 * Redirects are not followed: vendor APIs do not redirect, and a 3xx reaches the SDK as a failed call.
 * A request this cannot express (a streamed or multipart body) goes to global fetch unchanged.
 */
export function createVendorFetch(
  options: { dispatcher?: Dispatcher; maxBytes?: number } = {},
): typeof globalThis.fetch {
  const dispatcher = options.dispatcher ?? new Agent(AGENT_OPTIONS);
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_REPLY_BYTES;

  async function vendorFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
    const body = init.body;
    if (input instanceof Request || (body != null && typeof body !== 'string' && !(body instanceof Uint8Array))) {
      return globalThis.fetch(input, init);
    }
    const signal = init.signal ?? undefined;
    const reply = await send(dispatcher, input, {
      method: init.method,
      headers: plainHeaders(init.headers),
      body: body ?? undefined,
      signal,
    });

    const headers = new Headers();
    for (const [name, value] of Object.entries(reply.headers)) {
      if (Array.isArray(value)) for (const item of value) headers.append(name, item);
      else if (value !== undefined) headers.set(name, value);
    }
    const status = reply.statusCode;
    if (NULL_BODY_STATUSES.has(status) || init.method === 'HEAD') {
      reply.body.resume();
      return new Response(null, { status, headers });
    }
    const contentType = headers.get('content-type') ?? '';
    const length = Number(headers.get('content-length') ?? NaN);
    if (Number.isFinite(length) && length > maxBytes) {
      reply.body.on('error', () => undefined); // the abort destroy() reports: nobody reads this body
      reply.body.destroy();
      throw tooLarge(maxBytes);
    }
    if (contentType.includes('text/event-stream') || !Number.isFinite(length) || length > MAX_BUFFERED_BYTES) {
      return new Response(Readable.toWeb(counted(reply.body, maxBytes, signal)) as ReadableStream<Uint8Array>, {
        status,
        headers,
      });
    }
    try {
      return new Response(new Uint8Array(await reply.body.arrayBuffer()), { status, headers });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new TypeError('terminated', { cause: error });
    }
  }

  return vendorFetch as typeof globalThis.fetch;
}

interface SendInit {
  method?: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
}

/** One request on the pool, failing as global fetch does: the signal's reason on abort, else `TypeError('fetch failed')`. */
async function send(dispatcher: Dispatcher, url: string | URL, init: SendInit): Promise<Dispatcher.ResponseData> {
  init.signal?.throwIfAborted();
  try {
    return await request(url, {
      dispatcher,
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: init.headers,
      body: init.body,
      signal: init.signal,
    });
  } catch (error) {
    if (init.signal?.aborted) throw init.signal.reason;
    throw new TypeError('fetch failed', { cause: error });
  }
}

/** A vendor's reply as a narrow adapter path reads it (openai-responses-stream.ts): Node streams, no WHATWG objects. */
export interface VendorReply {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The body as UTF-8 text, chunk by chunk as it arrives. */
  body: AsyncIterable<string>;
  /** The whole body as text. */
  text(): Promise<string>;
}

/**
 * A request on the process-wide vendor pool (the one the shared vendor fetch uses), for an adapter path that
 * reads the reply itself. Failures are those of the vendor fetch (see above); a body that breaks off while
 * being read rejects as `TypeError('terminated')`, as a fetch body does.
 */
export async function vendorRequest(url: string, init: SendInit & { maxBytes?: number }): Promise<VendorReply> {
  const maxBytes = init.maxBytes ?? DEFAULT_MAX_REPLY_BYTES;
  const reply = await send(sharedPool(), url, init);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const terminated = (error: unknown) => {
    if (init.signal?.aborted) return init.signal.reason as unknown;
    return new TypeError('terminated', { cause: error });
  };
  async function* body(): AsyncGenerator<string> {
    reply.body.setEncoding('utf8');
    // Counted in characters (cheaper than bytes, and never more than them): the budget bounds what is held.
    let seen = 0;
    try {
      for await (const chunk of reply.body) {
        seen += (chunk as string).length;
        if (seen > maxBytes) throw tooLarge(maxBytes);
        yield chunk as string;
      }
    } catch (error) {
      if (isTooLarge(error)) throw error;
      throw terminated(error);
    } finally {
      if (!reply.body.destroyed) reply.body.destroy();
    }
  }
  return {
    status: reply.statusCode,
    headers,
    body: body(),
    text: async () => {
      // An error reply is read whole: only up to the budget.
      let text = '';
      try {
        for await (const chunk of body()) text += chunk;
      } catch (error) {
        throw isTooLarge(error) ? error : terminated(error);
      }
      return text;
    },
  };
}

const AGENT_OPTIONS: Agent.Options = { keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 };
let sharedDispatcher: Dispatcher | undefined;
/** The process-wide keep-alive pool every vendor call uses (the shared fetch and vendorRequest). */
const sharedPool = (): Dispatcher => (sharedDispatcher ??= new Agent(AGENT_OPTIONS));

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);
/** A vendor reply (a whole event stream included) past this many bytes is cut, unless the adapter is given its own budget. */
const DEFAULT_MAX_REPLY_BYTES = 64 * 1024 * 1024;

const tooLargeMarker = Symbol.for('switchyard.VendorReplyTooLarge');

/** A vendor reply past the budget: its connection is closed; classified as a malformed reply (not retried). */
export class VendorReplyTooLarge extends Error {
  override readonly name = 'VendorReplyTooLarge';
  readonly [tooLargeMarker] = true;
}

const tooLarge = (maxBytes: number) => new VendorReplyTooLarge(`the reply is larger than ${maxBytes} bytes`);

/** The budget's error behind another (fetch and the AI SDK wrap body errors), if any. */
export function findReplyTooLarge(error: unknown): VendorReplyTooLarge | undefined {
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 8; depth++) {
    if ((current as Record<symbol, unknown>)[tooLargeMarker] === true) return current as VendorReplyTooLarge;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

const isTooLarge = (error: unknown) => findReplyTooLarge(error) !== undefined;

/**
 * The body with its bytes counted as they pass: past `maxBytes` it errors, and the pipeline destroys the vendor's
 * socket (nothing more is read). An abort of the call errors it with the signal's reason, as fetch does.
 */
function counted(body: Readable, maxBytes: number, signal: AbortSignal | undefined): Readable {
  let seen = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      callback(seen > maxBytes ? new TypeError('terminated', { cause: tooLarge(maxBytes) }) : null, chunk);
    },
  });
  pipeline(body, counter, (error) => {
    if (error && signal?.aborted) counter.destroy(signal.reason as Error);
  });
  return counter;
}
/** Replies up to this size (and of known length) are read whole before the SDK sees them. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

function plainHeaders(headers: RequestInit['headers']): Record<string, string> {
  const result: Record<string, string> = {};
  if (headers === undefined) return result;
  if (headers instanceof Headers || Array.isArray(headers)) {
    for (const [name, value] of headers instanceof Headers ? headers.entries() : headers)
      result[name.toLowerCase()] = value!;
    return result;
  }
  for (const [name, value] of Object.entries(headers)) {
    // The SDK's header helpers leave unset headers as undefined; fetch would drop them too.
    if (value !== undefined && value !== null) result[name.toLowerCase()] = String(value);
  }
  return result;
}

const shared = new Map<number, typeof globalThis.fetch>();

/** The adapter's fetch: the one given, else the process-wide vendor fetch (one pool for every vendor), with the reply budget. */
export function vendorFetchFor(
  options: Pick<VendorAdapterOptions, 'fetch' | 'maxStreamBytes'>,
): typeof globalThis.fetch {
  if (options.fetch) return options.fetch;
  const maxBytes = options.maxStreamBytes ?? DEFAULT_MAX_REPLY_BYTES;
  let fetch = shared.get(maxBytes);
  if (!fetch) shared.set(maxBytes, (fetch = createVendorFetch({ dispatcher: sharedPool(), maxBytes })));
  return fetch;
}

/**
 * Key, base URL and fetch for an AI SDK provider factory of a vendor with a default host. Key and base URL
 * are always explicit (an empty key, the default host) so the SDK never reads its own environment variables.
 */
export function sdkConnection(options: VendorAdapterOptions, defaultBaseURL: string) {
  return { apiKey: options.apiKey ?? '', baseURL: options.baseURL ?? defaultBaseURL, fetch: vendorFetchFor(options) };
}

/**
 * For AI SDK providers whose host is fixed in the package (Deepgram): a fetch that sends what the SDK
 * addresses to `sdkOrigin` to the configured base URL instead (a regional endpoint, a proxy, a fake on
 * loopback). Any other URL passes unchanged.
 */
export function rebasedFetch(
  fetch: typeof globalThis.fetch,
  sdkOrigin: string,
  baseURL: string,
): typeof globalThis.fetch {
  const base = baseURL.replace(/\/+$/, '');
  if (base === sdkOrigin) return fetch;
  return (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : undefined;
    if (url !== undefined && (url === sdkOrigin || url.startsWith(`${sdkOrigin}/`)))
      return fetch(base + url.slice(sdkOrigin.length), init);
    return fetch(input, init);
  };
}
