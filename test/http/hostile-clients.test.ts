import net from 'node:net';
import { ADMIN_TOKEN, useTestApp } from '../support/harness';

/**
 * Clients that hold connections on purpose: a body sent a few bytes at a time, a body the service need not read
 * (no key, an unknown path), a crowd of tricklers at the connection cap, replies nobody reads. Each is cut and its
 * connection closed within the configured bounds, while /healthz and the API go on answering.
 */
describe('http: hostile clients cannot hold connections', () => {
  const suite = useTestApp({
    app: {
      env: {
        HTTP_MAX_CONNECTIONS: '30',
        HTTP_BODY_GRACE_MS: '1000',
        HTTP_BODY_MIN_BYTES_PER_SECOND: '2048',
        HTTP_SEND_TIMEOUT_MS: '1500',
        HTTP_MAX_UNSENT_BYTES: String(1024 * 1024),
      },
    },
  });
  const port = () => Number(new URL(suite.app.baseUrl).port);

  /** A raw connection: what it received, and a promise of its close. */
  interface RawClient {
    socket: net.Socket;
    received: () => string;
    closed: Promise<void>;
  }
  const connect = (options: { read?: boolean } = {}) =>
    new Promise<RawClient>((resolve, reject) => {
      const socket = net.connect(port(), '127.0.0.1');
      const chunks: Buffer[] = [];
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      socket.on('error', () => undefined);
      if (options.read === false) socket.pause();
      else socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.once('connect', () =>
        resolve({ socket, received: () => Buffer.concat(chunks).toString('latin1'), closed }),
      );
      setTimeout(() => reject(new Error('connect timed out')), 5000).unref();
    });
  /** Sends `byte` every `everyMs` until the socket closes. */
  const trickle = (client: RawClient, everyMs = 200) => {
    const timer = setInterval(
      () => (client.socket.writable ? client.socket.write('x') : clearInterval(timer)),
      everyMs,
    );
    void client.closed.then(() => clearInterval(timer));
  };
  const head = (method: string, path: string, headers: Record<string, string | number>) =>
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('')}\r\n`;
  const healthWithin = async (ms: number) => {
    const started = Date.now();
    const health = await fetch(`${suite.app.baseUrl}/healthz`, { signal: AbortSignal.timeout(ms) });
    expect(health.status).toBe(200);
    return Date.now() - started;
  };

  it('answers 401 from the headers before reading a body, and closes the connection instead of reading the rest', async () => {
    // Bad JSON and no key: who is asking is settled first.
    const refused = await fetch(`${suite.app.baseUrl}/v2/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('auth.unauthorized');

    // A 9 MB body announced, two bytes sent: the 401 comes at once and the connection is closed.
    const client = await connect();
    client.socket.write(
      head('POST', '/v2/responses', { 'content-type': 'application/json', 'content-length': 9_000_000 }) + '{"',
    );
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(client.received()).toMatch(/connection: close/i);
  });

  it('closes a connection whose body goes to a path that reads none', async () => {
    const client = await connect();
    client.socket.write(
      head('POST', '/healthz', { 'content-type': 'application/json', 'content-length': 9_000_000 }) + 'ab',
    );
    trickle(client);
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 40[45] /);
  });

  it('cuts a body that trickles below the minimum rate with a 408 and closes its connection', async () => {
    const client = await connect();
    const started = Date.now();
    client.socket.write(
      head('POST', '/v2/conversations', {
        'x-auth-token': suite.key,
        'content-type': 'application/json',
        'content-length': 9_000_000,
      }) + '{"items":[',
    );
    trickle(client);
    await client.closed;
    // The grace (1 s) and a sweep (at most 250 ms here), not Node's 300 s request timeout.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(client.received()).toContain('"code":"request.timeout"');
    // A body that arrives at a decent pace is not cut.
    const fine = await suite.app.request('POST', '/v2/conversations', {
      key: suite.key,
      body: { metadata: { note: 'y'.repeat(400) } },
    });
    expect(fine.status).toBe(200);
  });

  it("answers a trickling body on /openai/v1 with OpenAI's error body, as every error there", async () => {
    const client = await connect();
    client.socket.write(
      head('POST', '/openai/v1/chat/completions', {
        authorization: `Bearer ${suite.key}`,
        'content-type': 'application/json',
        'content-length': 9_000_000,
      }) + '{"messages":[',
    );
    trickle(client);
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
    const body = JSON.parse(client.received().slice(client.received().indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({
      error: {
        message: expect.stringContaining('too slowly'),
        type: 'invalid_request_error',
        param: null,
        code: 'request.timeout',
      },
    });
  });

  it('keeps /healthz and the API answering while tricklers fill the connection cap', async () => {
    const tricklers = await Promise.all(Array.from({ length: 60 }, () => connect()));
    for (const client of tricklers) {
      client.socket.write(
        head('POST', '/v2/conversations', {
          'x-auth-token': suite.key,
          'content-type': 'application/json',
          'content-length': 9_000_000,
        }) + '{',
      );
      trickle(client, 100);
    }
    // At the cap of 30, each new connection (these included) takes the place of the trickler receiving longest.
    for (let round = 0; round < 5; round++) expect(await healthWithin(2000)).toBeLessThan(2000);
    const models = await suite.app.request('GET', '/v2/models', { key: suite.key });
    expect(models.status).toBe(200);
    await Promise.all(tricklers.map((client) => client.closed));
  });

  it('gives up replies their clients do not read, freeing their memory', async () => {
    // One item of 9 MiB: more than the kernel's buffers take from a reply (a few MiB on loopback), so most of it
    // waits in this process for a client that never reads.
    const created = await suite.app.request('POST', '/v2/conversations', {
      key: suite.key,
      body: { items: [{ type: 'message', role: 'user', content: 'z'.repeat(9 * 1024 * 1024) }] },
    });
    expect(created.status).toBe(200);
    const readers = await Promise.all(Array.from({ length: 3 }, () => connect({ read: false })));
    const started = Date.now();
    for (const client of readers)
      client.socket.write(
        head('GET', `/v2/conversations/${created.body.id}/items?limit=1`, { 'x-auth-token': suite.key }),
      );
    // Over the unsent budget (1 MiB), or stalled past the send timeout (1.5 s): either way, closed by the server.
    // A client that reads nothing cannot see its connection close, so the server's count of them is watched.
    const closedForStalling = async () => {
      const metrics = await fetch(`${suite.app.baseUrl}/metrics`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      const text = await metrics.text();
      return [
        ...text.matchAll(/switchyard_http_connections_closed_total\{reason="(?:stalled_reply|unsent_budget)"\} (\d+)/g),
      ].reduce((sum, match) => sum + Number(match[1]), 0);
    };
    while ((await closedForStalling()) < readers.length) {
      expect(Date.now() - started).toBeLessThan(8000);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await healthWithin(1000)).toBeLessThan(1000);
    // Now reading, each gets what the kernel had taken, then the end: never the whole 9 MiB reply.
    for (const client of readers) {
      let received = 0;
      client.socket.on('data', (chunk: Buffer) => (received += chunk.length));
      client.socket.resume();
      await client.closed;
      expect(received).toBeLessThan(9 * 1024 * 1024);
    }
  });

  it('does not give up a large reply its client reads', async () => {
    const created = await suite.app.request('POST', '/v2/conversations', {
      key: suite.key,
      body: { items: [{ type: 'message', role: 'user', content: 'w'.repeat(9 * 1024 * 1024) }] },
    });
    const page = await suite.app.request('GET', `/v2/conversations/${created.body.id}/items?limit=1`, {
      key: suite.key,
    });
    expect(page.status).toBe(200);
    expect(page.body.data[0].content[0].text).toHaveLength(9 * 1024 * 1024);
  });
});
