import net from 'node:net';
import { useTestApp } from '../support/harness';
import { SseStream } from '../support/sse';

/**
 * A flood of silent sockets neither keeps connections open for ever nor locks the service out: connections with
 * no request in flight are closed after HTTP_IDLE_TIMEOUT_MS, and at HTTP_MAX_CONNECTIONS the longest-idle one
 * makes room for a new one. A request in flight (an SSE stream) outlives the idle timeout.
 */
describe('http: bounded connections', () => {
  const suite = useTestApp({ app: { env: { HTTP_MAX_CONNECTIONS: '40', HTTP_IDLE_TIMEOUT_MS: '1500' } } });

  /** Opens a socket that sends nothing; resolves when it is connected, with a promise of its close. */
  const silentSocket = (port: number) =>
    new Promise<{ socket: net.Socket; closed: Promise<void> }>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      socket.once('connect', () => resolve({ socket, closed }));
      socket.once('error', () => undefined);
      setTimeout(() => reject(new Error('connect timed out')), 5000).unref();
    });

  it('answers /healthz and the API through 200 silent sockets, and closes the silent ones after the idle timeout', async () => {
    const port = Number(new URL(suite.app.baseUrl).port);
    const silent = await Promise.all(Array.from({ length: 200 }, () => silentSocket(port)));
    const health = await fetch(`${suite.app.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    const models = await suite.app.request('GET', '/v2/models', { key: suite.key });
    expect(models.status).toBe(200);
    // Every silent socket is closed by the server: evicted for newer ones at the cap, or reaped when idle.
    await Promise.all(silent.map((entry) => entry.closed));
    silent.forEach((entry) => entry.socket.destroy());
  });

  it('keeps a stream open past the idle timeout while its request is in flight', async () => {
    const stream = await SseStream.open(`${suite.app.baseUrl}/v2/responses`, {
      key: suite.key,
      body: { model: 'dev-echo', input: '/delay 100 /words 30', background: false, stream: true },
    });
    const events = await stream.readAll();
    expect(events.at(-1)?.event).toBe('response.completed');
    expect(events.filter((event) => event.event === 'response.output_text.delta').length).toBeGreaterThan(1);
  });
});
