/**
 * A small Server-Sent Events client for tests: reads `event:` / `data:` lines from fetch's body stream,
 * one parsed event at a time, and can be aborted mid-stream (a client that goes away).
 * Only what the service sends is supported: `event`, `data` (JSON, possibly on several lines), comments.
 */
export interface SseEvent<T = any> {
  /** The `event:` line ('message' when absent, as in browsers). */
  event: string;
  /** The `data:` payload parsed as JSON. */
  data: T;
}

export interface SseStreamOptions {
  method?: string;
  key?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export class SseStream {
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private ended = false;

  private constructor(
    readonly status: number,
    readonly headers: Headers,
    private readonly reader: ReadableStreamDefaultReader<Uint8Array> | undefined,
    private readonly controller: AbortController,
    /** The body when the reply is not an event stream (an error envelope). */
    readonly errorBody: unknown,
  ) {}

  /** Opens `url`; a non-SSE reply (e.g. a 400) is read whole into `errorBody`, with no events. */
  static async open(url: string, options: SseStreamOptions = {}): Promise<SseStream> {
    const controller = new AbortController();
    const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers };
    if (options.key) headers['x-auth-token'] = options.key;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const reply = await fetch(url, {
      method: options.method ?? (body === undefined ? 'GET' : 'POST'),
      headers,
      body,
      signal: controller.signal,
    });
    const isStream = (reply.headers.get('content-type') ?? '').startsWith('text/event-stream');
    if (!isStream || !reply.body) {
      const text = await reply.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // keep the text
      }
      const stream = new SseStream(reply.status, reply.headers, undefined, controller, parsed);
      stream.ended = true;
      return stream;
    }
    return new SseStream(reply.status, reply.headers, reply.body.getReader(), controller, undefined);
  }

  /** The next event, or undefined when the server ended the stream. */
  async next(): Promise<SseEvent | undefined> {
    for (;;) {
      const event = this.takeEvent();
      if (event) return event;
      if (this.ended || !this.reader) return undefined;
      const { done, value } = await this.reader.read();
      if (done) {
        this.ended = true;
        this.buffer += this.decoder.decode();
        // A final block without its blank line is incomplete by the SSE rules: dropped.
        return this.takeEvent();
      }
      this.buffer += this.decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    }
  }

  /** Reads events until (and including) the first that matches, or until the stream ends. */
  async readUntil(predicate: (event: SseEvent) => boolean): Promise<SseEvent[]> {
    const events: SseEvent[] = [];
    for (let event = await this.next(); event; event = await this.next()) {
      events.push(event);
      if (predicate(event)) break;
    }
    return events;
  }

  /** Reads every remaining event until the server ends the stream. */
  async readAll(): Promise<SseEvent[]> {
    return this.readUntil(() => false);
  }

  /** Goes away mid-stream, as a client that closes the connection. */
  abort(): void {
    this.ended = true;
    this.controller.abort();
  }

  private takeEvent(): SseEvent | undefined {
    for (;;) {
      const end = this.buffer.indexOf('\n\n');
      if (end < 0) return undefined;
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let name = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue; // comment (keep-alive)
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') name = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length === 0) continue; // a comment-only block is not an event
      return { event: name, data: JSON.parse(data.join('\n')) };
    }
  }
}

export const TERMINAL_EVENTS = ['response.completed', 'response.incomplete', 'response.failed', 'response.cancelled'];
export const isTerminal = (event: SseEvent) => TERMINAL_EVENTS.includes(event.event);
