import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEventListeners } from 'node:events';
import Koa from 'koa';
import { sendEventStream } from '../../src/http/sse';
import type { StreamEvent } from '../../src/events/stream-event';

/**
 * sendEventStream waits for 'drain' whenever the socket buffer is full. Each wait must clean up after itself:
 * a long stream to a slow client waits many times, and listeners left on the per-request abort signal pile up
 * for the whole stream.
 */
describe('SSE: backpressure waits', () => {
  let server: Server;
  let baseUrl: string;
  const listenerCounts: number[] = [];
  const EVENTS = 40;
  let sourceClosed: () => void = () => undefined;

  beforeAll(async () => {
    const app = new Koa();
    app.use(async (ctx) => {
      ctx.state.requestId = 'req_test';
      if (ctx.path === '/endless') {
        await sendEventStream(ctx, async function* (): AsyncIterable<StreamEvent> {
          try {
            for (let index = 0; ; index++)
              yield { type: 'response.output_text.delta', sequence_number: index, delta: 'y'.repeat(64 * 1024) };
          } finally {
            sourceClosed();
          }
        });
        return;
      }
      await sendEventStream(ctx, async function* (signal): AsyncIterable<StreamEvent> {
        // Each event is larger than the socket's high-water mark, so every write reports backpressure.
        const filler = 'x'.repeat(64 * 1024);
        for (let index = 0; index < EVENTS; index++) {
          listenerCounts.push(getEventListeners(signal, 'abort').length);
          yield { type: 'response.output_text.delta', sequence_number: index, delta: filler };
        }
      });
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('leaves no listener on the abort signal after each drain wait', async () => {
    const reply = await fetch(`${baseUrl}/`);
    const text = await reply.text();
    expect(text.match(/^event: response\.output_text\.delta$/gm)).toHaveLength(EVENTS);
    expect(listenerCounts).toHaveLength(EVENTS);
    // Whatever the stream holds on the signal at the start, it holds no more later on.
    expect(Math.max(...listenerCounts)).toBe(listenerCounts[0]);
  });

  it('a client that goes away during a drain wait ends the stream and closes its source', async () => {
    const closed = new Promise<void>((resolve) => (sourceClosed = resolve));
    const controller = new AbortController();
    const reply = await fetch(`${baseUrl}/endless`, { signal: controller.signal });
    const reader = reply.body!.getReader();
    await reader.read();
    // The client stops reading: the server's writes back up and it waits for 'drain' until the client leaves.
    controller.abort();
    await closed;
  });
});
