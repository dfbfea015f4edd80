import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import pino from 'pino';
import { ApiError } from '../../src/errors';
import { errorMiddleware } from '../../src/http/error-middleware';

/** The error envelope, over HTTP, for a reply that cannot be serialised (Koa's own answer would be plain text). */
describe('error middleware', () => {
  let server: ReturnType<Koa['listen']>;
  let base: string;
  beforeAll(async () => {
    const app = new Koa();
    app.silent = true;
    app.use(errorMiddleware(pino({ level: 'silent' })));
    app.use((ctx) => {
      if (ctx.path === '/unserialisable') ctx.body = { count: BigInt(1) };
      else if (ctx.path === '/created') {
        ctx.status = 201;
        ctx.body = { id: 'x_1' };
      } else if (ctx.path === '/text') ctx.body = 'plain';
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('answers a reply that cannot be serialised with the 500 envelope', async () => {
    const reply = await fetch(`${base}/unserialisable`);
    expect(reply.status).toBe(500);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await reply.json()).toEqual({
      error: { code: 'request.execution_failed', message: 'The request failed unexpectedly.' },
    });
  });

  it('keeps the status and type of ordinary replies', async () => {
    const created = await fetch(`${base}/created`);
    expect([created.status, created.headers.get('content-type'), await created.json()]).toEqual([
      201,
      'application/json; charset=utf-8',
      { id: 'x_1' },
    ]);
    const text = await fetch(`${base}/text`);
    expect([text.status, text.headers.get('content-type'), await text.text()]).toEqual([
      200,
      'text/plain; charset=utf-8',
      'plain',
    ]);
    const missing = await fetch(`${base}/nothing`);
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([
      404,
      'request.not_found',
    ]);
  });
});

/** A client that left before its reply was built is its own doing: logged at debug, not as a server error. */
describe('error middleware: a client gone', () => {
  it('logs the 499 of a client that went away at debug, not error', async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    let thrown!: () => void;
    const handled = new Promise<void>((resolve) => (thrown = resolve));
    const app = new Koa();
    app.silent = true;
    app.use(errorMiddleware(logger));
    app.use(async (ctx) => {
      // As the reply budget does for a request whose client left while it waited: nothing is built, a 499.
      await new Promise((resolve) => ctx.req.socket.once('close', resolve));
      setImmediate(thrown);
      throw new ApiError(499, 'request.cancelled', 'The client closed the connection.');
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const abort = new AbortController();
    const request = fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/page`, {
      signal: abort.signal,
    }).catch(() => undefined);
    // The request has arrived once the server has a connection; then the client leaves.
    await new Promise<void>((resolve) => server.once('request', () => resolve()));
    abort.abort();
    await request;
    await handled;
    await new Promise((resolve) => server.close(resolve));
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(lines).toContainEqual(expect.objectContaining({ level: 20, msg: 'error after the response started' }));
  });
});
