import { once } from 'node:events';
import type { Context } from 'koa';
import type { StreamEvent } from '../events/stream-event';

/**
 * Serves a stream of events as Server-Sent Events: `event: <type>` and `data: <json>` per event. Stops when
 * the source ends or the client goes away; the source gets the abort signal so it stops reading too.
 */
export function sendEventStream(
  ctx: Context,
  source: (signal: AbortSignal) => AsyncIterable<StreamEvent>,
  options: StreamOptions = {},
): Promise<void> {
  return serveStream(ctx, source, (event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`, options);
}

export interface StreamOptions {
  /**
   * A hand-over ends the stream only after its first event (waited for up to FIRST_EVENT_WAIT_MS): a creation's
   * stream, whose first event (`response.created`, stored with the resource) is the only way its client learns the
   * id it resumes with.
   */
  firstBeforeHandover?: boolean;
}

/** How long a hand-over waits for a creation stream's first event, which is normally at hand already. */
const FIRST_EVENT_WAIT_MS = 5000;

/**
 * Serves objects as OpenAI's chat completion streams do: a `data: <json>` frame each, then `data: [DONE]`
 * when the source ends.
 */
export function sendDataStream(ctx: Context, source: (signal: AbortSignal) => AsyncIterable<object>): Promise<void> {
  async function* framed(signal: AbortSignal): AsyncIterable<string> {
    for await (const data of source(signal)) yield `data: ${JSON.stringify(data)}\n\n`;
    yield 'data: [DONE]\n\n';
  }
  return serveStream(ctx, framed, (frame) => frame, {});
}

async function serveStream<T>(
  ctx: Context,
  source: (signal: AbortSignal) => AsyncIterable<T>,
  frame: (item: T) => string,
  options: StreamOptions,
): Promise<void> {
  const abort = new AbortController();
  const { res } = ctx;
  ctx.respond = false;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': ctx.state.requestId,
  });
  res.flushHeaders();
  // The response's 'close' marks the client going away (the request's fires once its body is read).
  const onClose = () => {
    ctx.state.streamCut ??= 'client';
    abort.abort();
  };
  res.once('close', onClose);
  // At a shutdown's hand-over the stream ends cleanly (the work goes on in another process): a last comment says
  // so, and the client resumes with `starting_after` at the last event it read.
  const handover = ctx.lifecycle?.handover;
  let written = 0;
  let firstEventWait: NodeJS.Timeout | undefined;
  const handOver = () => {
    clearTimeout(firstEventWait);
    if (abort.signal.aborted) return;
    ctx.state.streamCut = 'shutdown';
    if (!res.writableEnded)
      res.write(': this server is shutting down; resume with starting_after=<last sequence_number>\n\n');
    ctx.metrics?.streamsHandedOver.inc();
    abort.abort();
  };
  let handoverDue = false;
  const onHandover = () => {
    if (!options.firstBeforeHandover || written > 0) return handOver();
    handoverDue = true;
    firstEventWait = setTimeout(handOver, FIRST_EVENT_WAIT_MS);
  };
  if (handover?.aborted) onHandover();
  else handover?.addEventListener('abort', onHandover, { once: true });
  // A drain lets open streams go on for its grace (http/lifecycle.ts).
  const streamEnded = ctx.lifecycle?.streamOpened();
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  ctx.metrics?.openStreams.inc();
  try {
    for await (const item of source(abort.signal)) {
      if (abort.signal.aborted) break;
      written++;
      if (handoverDue) {
        res.write(frame(item));
        handOver();
        break;
      }
      if (!res.write(frame(item))) {
        // once() with the signal rejects on abort (caught below) and removes its listeners either way; racing a
        // second once() on the signal left one abort listener behind per wait for the rest of the stream.
        await once(res, 'drain', { signal: abort.signal });
      }
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    ctx.metrics?.openStreams.dec();
    streamEnded?.();
    clearTimeout(firstEventWait);
    clearInterval(keepAlive);
    res.off('close', onClose);
    handover?.removeEventListener('abort', onHandover);
    if (!res.writableEnded) res.end();
  }
}
