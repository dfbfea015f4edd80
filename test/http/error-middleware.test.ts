import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import pino from 'pino';
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
    expect(await reply.json()).toEqual({ error: { code: 'request.execution_failed', message: 'The request failed unexpectedly.' } });
  });

  it('keeps the status and type of ordinary replies', async () => {
    const created = await fetch(`${base}/created`);
    expect([created.status, created.headers.get('content-type'), await created.json()]).toEqual([201, 'application/json; charset=utf-8', { id: 'x_1' }]);
    const text = await fetch(`${base}/text`);
    expect([text.status, text.headers.get('content-type'), await text.text()]).toEqual([200, 'text/plain; charset=utf-8', 'plain']);
    const missing = await fetch(`${base}/nothing`);
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([404, 'request.not_found']);
  });
});
