import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createVendorFetch } from '../../src/providers/shared/vendor-fetch';

/** The vendor fetch must keep the fetch contract the AI SDK relies on (see vendor-fetch.ts). */
describe('vendor fetch', () => {
  let server: Server;
  let base: string;
  let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void;
  const vendorFetch = createVendorFetch();

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => handler(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    server.close();
  });

  it('sends method, headers and body and returns status, headers and a readable JSON body', async () => {
    let seen: { method?: string; auth?: string; type?: string; body?: string } = {};
    handler = (req, res, body) => {
      seen = { method: req.method, auth: req.headers.authorization, type: req.headers['content-type'], body };
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'req_1', 'set-cookie': ['a=1', 'b=2'] });
      res.end(JSON.stringify({ ok: true }));
    };
    const response = await vendorFetch(`${base}/v1/things`, {
      method: 'POST',
      headers: {
        Authorization: 'Bearer k',
        'Content-Type': 'application/json',
        'x-unset': undefined,
      } as unknown as Record<string, string>,
      body: JSON.stringify({ a: 1 }),
    });
    expect(seen).toEqual({ method: 'POST', auth: 'Bearer k', type: 'application/json', body: '{"a":1}' });
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.headers.get('x-request-id')).toBe('req_1');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await response.json()).toEqual({ ok: true });
  });

  it('hands an event stream over as it arrives', async () => {
    let finish: () => void = () => undefined;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      finish = () => res.end('data: two\n\n');
    };
    const response = await vendorFetch(`${base}/stream`, { method: 'POST', body: '{}' });
    const reader = response.body!.getReader();
    const first = await reader.read();
    // The first event arrived while the server still holds the reply open.
    expect(new TextDecoder().decode(first.value)).toBe('data: one\n\n');
    finish();
    let rest = '';
    for (let part = await reader.read(); !part.done; part = await reader.read())
      rest += new TextDecoder().decode(part.value);
    expect(rest).toBe('data: two\n\n');
  });

  it('answers 204 with no body and passes error statuses through', async () => {
    handler = (req, res) => {
      res.writeHead(req.url === '/empty' ? 204 : 429, { 'retry-after': '2', 'content-type': 'application/json' });
      res.end(req.url === '/empty' ? undefined : '{"error":"slow down"}');
    };
    const empty = await vendorFetch(`${base}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
    const limited = await vendorFetch(`${base}/limited`, { method: 'POST', body: '{}' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(await limited.text()).toBe('{"error":"slow down"}');
  });

  it('rejects a connection failure as TypeError("fetch failed") with the socket error as cause, like global fetch', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    closed.close();
    await once(closed, 'close');
    const error = await vendorFetch(`http://127.0.0.1:${port}/`).then(
      () => undefined,
      (reason: unknown) => reason as TypeError & { cause?: { code?: string } },
    );
    expect(error?.name).toBe('TypeError');
    expect(error?.message).toBe('fetch failed');
    expect(error?.cause?.code).toBe('ECONNREFUSED');
  });

  it('rejects with the signal reason when aborted before the reply, and errors the body when aborted during it', async () => {
    handler = () => undefined; // never answers
    const before = new AbortController();
    const pending = vendorFetch(`${base}/hang`, { signal: before.signal });
    before.abort(new DOMException('stop', 'AbortError'));
    await expect(pending).rejects.toMatchObject({ name: 'AbortError', message: 'stop' });

    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
    };
    const during = new AbortController();
    const response = await vendorFetch(`${base}/stream`, { signal: during.signal });
    const reader = response.body!.getReader();
    await reader.read();
    during.abort(new DOMException('stop', 'AbortError'));
    await expect(reader.read()).rejects.toBeDefined();
  });

  it('refuses a request whose signal is already aborted without sending it', async () => {
    let called = false;
    handler = (_req, res) => {
      called = true;
      res.end();
    };
    await expect(vendorFetch(`${base}/x`, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(called).toBe(false);
  });
});
