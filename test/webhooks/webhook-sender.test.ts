import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import pino from 'pino';
import { newId } from '../../src/ids';
import { createWebhookSender, WEBHOOK_USER_AGENT, type WebhookSenderOptions } from '../../src/webhooks/webhook-sender';
import { useTestApp } from '../support/harness';
import { answer, hang, startReceiver, type Receiver } from './receiver';

/** Log lines as parsed JSON, to check there is one per attempt and that no payload or secret is in them. */
function captureLogs() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, stream) };
}

describe('webhook sender (one-shot, recorded)', () => {
  const suite = useTestApp();
  const receivers: Receiver[] = [];

  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });

  async function receiver(...args: Parameters<typeof startReceiver>) {
    const started = await startReceiver(...args);
    receivers.push(started);
    return started;
  }

  function sender(options: Partial<WebhookSenderOptions> = {}) {
    const logs = captureLogs();
    const created = createWebhookSender({
      db: suite.app.db,
      allowPrivateNetworks: true,
      logger: logs.logger,
      ...options,
    });
    return { ...created, logs: logs.lines };
  }

  const deliveryRow = (resourceId: string) =>
    suite.app.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('resource_id', '=', resourceId)
      .executeTakeFirstOrThrow();

  const payloadFor = (resourceId: string) => ({
    response_id: resourceId,
    conversation_id: 'conv_0123',
    status: 'completed',
    status_at: 1_763_800_000,
  });

  it('POSTs the exact body once with JSON and a service User-Agent, unsigned, and records the delivery', async () => {
    const target = await receiver(answer(204));
    const { send, logs } = sender();
    const resourceId = newId('resp');
    const payload = payloadFor(resourceId);
    const url = `${target.url}/hooks/switchyard?token=receiver-secret`;

    const before = Date.now();
    expect(await send({ resourceId, accountId: suite.accountId, url, payload })).toEqual({
      status: 'delivered',
      responseStatus: 204,
    });

    expect(target.requests).toHaveLength(1);
    const [request] = target.requests;
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/hooks/switchyard?token=receiver-secret');
    expect(request!.body).toBe(JSON.stringify(payload));
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['user-agent']).toBe(WEBHOOK_USER_AGENT);
    expect(request!.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify(payload))));
    expect(Object.keys(request!.headers).filter((name) => /sign|authorization|auth-token/i.test(name))).toEqual([]);

    const row = await deliveryRow(resourceId);
    expect(row).toMatchObject({
      id: expect.stringMatching(/^wh_/),
      account_id: suite.accountId,
      url,
      payload,
      status: 'delivered',
      response_status: 204,
      error: null,
    });
    expect(row.duration_ms).toEqual(expect.any(Number));
    expect(row.duration_ms).toBeGreaterThanOrEqual(0);
    expect(row.attempted_at!.getTime()).toBeGreaterThanOrEqual(before - 1000);

    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      level: 30,
      msg: 'webhook delivered',
      resourceId,
      accountId: suite.accountId,
      target: target.url,
      status: 'delivered',
      responseStatus: 204,
    });
    const logged = JSON.stringify(logs);
    expect(logged).not.toContain('receiver-secret');
    expect(logged).not.toContain('conv_0123');
  });

  it('sends at most once per resource: a second send is skipped and the receiver still saw one request', async () => {
    const target = await receiver(answer(200));
    const { send } = sender();
    const resourceId = newId('resp');
    const delivery = {
      resourceId,
      accountId: suite.accountId,
      url: `${target.url}/hook`,
      payload: payloadFor(resourceId),
    };
    expect(await send(delivery)).toEqual({ status: 'delivered', responseStatus: 200 });
    // A retried activity or a re-run job: a different sender instance, same resource.
    expect(await sender().send({ ...delivery, payload: { ...delivery.payload, status: 'failed' } })).toEqual({
      status: 'skipped',
    });
    expect(target.requests).toHaveLength(1);
    expect(JSON.parse(target.requests[0]!.body).status).toBe('completed');
    expect((await deliveryRow(resourceId)).status).toBe('delivered');
  });

  it('lets exactly one of two concurrent sends for the same resource through', async () => {
    const target = await receiver(answer(200));
    const resourceId = newId('resp');
    const delivery = {
      resourceId,
      accountId: suite.accountId,
      url: `${target.url}/hook`,
      payload: payloadFor(resourceId),
    };
    const outcomes = await Promise.all([sender().send(delivery), sender().send(delivery)]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['delivered', 'skipped']);
    expect(target.requests).toHaveLength(1);
    const rows = await suite.app.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('resource_id', '=', resourceId)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('records a 500 as failed with the status and does not retry', async () => {
    const target = await receiver(answer(500));
    const { send, logs } = sender();
    const resourceId = newId('resp');
    const outcome = await send({
      resourceId,
      accountId: suite.accountId,
      url: `${target.url}/hook`,
      payload: payloadFor(resourceId),
    });
    expect(outcome).toEqual({ status: 'failed', responseStatus: 500, error: 'the receiver answered HTTP 500' });
    expect(target.requests).toHaveLength(1);
    expect(await deliveryRow(resourceId)).toMatchObject({
      status: 'failed',
      response_status: 500,
      error: 'the receiver answered HTTP 500',
    });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: 40, msg: 'webhook failed', responseStatus: 500 });
  });

  it("never reads the receiver's body: an endless one does not hold the delivery (its size budget is nothing)", async () => {
    let markClosed: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (markClosed = resolve));
    const target = await receiver((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = 'x'.repeat(64 * 1024);
      const pump = () => {
        while (!response.destroyed) if (!response.write(chunk)) return void response.once('drain', pump);
      };
      response.once('close', () => markClosed());
      pump();
    });
    const { send } = sender({ timeoutMs: 5_000 });
    const resourceId = newId('resp');
    const started = performance.now();
    expect(
      await send({
        resourceId,
        accountId: suite.accountId,
        url: `${target.url}/hook`,
        payload: payloadFor(resourceId),
      }),
    ).toEqual({ status: 'delivered', responseStatus: 200 });
    expect(performance.now() - started).toBeLessThan(5_000);
    // The connection is closed with the attempt, not drained (else this waits until the test's timeout).
    await closed;
  });

  it('gives up on a receiver that never answers after the configured timeout', async () => {
    const target = await receiver(hang);
    const { send } = sender({ timeoutMs: 300 });
    const resourceId = newId('resp');
    const started = performance.now();
    const outcome = await send({
      resourceId,
      accountId: suite.accountId,
      url: `${target.url}/hook`,
      payload: payloadFor(resourceId),
    });
    const elapsed = performance.now() - started;
    expect(outcome).toEqual({ status: 'failed', error: 'timed out after 300 ms' });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(5_000);
    expect(target.requests).toHaveLength(1);
    const row = await deliveryRow(resourceId);
    expect(row).toMatchObject({ status: 'failed', response_status: null, error: 'timed out after 300 ms' });
    expect(row.duration_ms).toBeGreaterThanOrEqual(290);
  });

  it('does not follow a redirect: the 302 is the outcome and the target sees nothing', async () => {
    const target = await receiver(answer(200));
    const redirecting = await receiver(answer(302, { location: `${target.url}/landed` }));
    const { send } = sender();
    const resourceId = newId('resp');
    const outcome = await send({
      resourceId,
      accountId: suite.accountId,
      url: `${redirecting.url}/hook`,
      payload: payloadFor(resourceId),
    });
    expect(outcome).toEqual({ status: 'failed', responseStatus: 302, error: 'the receiver answered HTTP 302' });
    expect(redirecting.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
  });

  it('records a refused connection (nothing listening) as failed with the network error', async () => {
    const closed = await startReceiver();
    const url = `${closed.url}/hook`;
    await closed.close();
    const { send } = sender();
    const resourceId = newId('resp');
    const outcome = await send({ resourceId, accountId: suite.accountId, url, payload: payloadFor(resourceId) });
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toMatch(/ECONNREFUSED/);
    expect(await deliveryRow(resourceId)).toMatchObject({
      status: 'failed',
      error: outcome.error,
      response_status: null,
    });
  });

  it('refuses a loopback URL when private networks are not allowed, without connecting', async () => {
    const target = await receiver(answer(200));
    const { send, logs } = sender({ allowPrivateNetworks: false });
    const resourceId = newId('resp');
    const outcome = await send({
      resourceId,
      accountId: suite.accountId,
      url: `${target.url}/hook`,
      payload: payloadFor(resourceId),
    });
    expect(outcome).toEqual({ status: 'refused', error: expect.stringMatching(/loopback address.*not allowed/) });
    expect(target.requests).toHaveLength(0);
    expect(await deliveryRow(resourceId)).toMatchObject({
      status: 'refused',
      error: outcome.error,
      response_status: null,
    });
    expect(logs[0]).toMatchObject({ level: 40, msg: 'webhook refused' });
  });

  it('refuses at connect time a host name that resolves to loopback (DNS rebinding)', async () => {
    const target = await receiver(answer(200));
    const { send } = sender({
      allowPrivateNetworks: false,
      resolveHost: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    const resourceId = newId('resp');
    const url = `http://hooks.rebind.test:${target.port}/hook`;
    const outcome = await send({ resourceId, accountId: suite.accountId, url, payload: payloadFor(resourceId) });
    expect(outcome).toEqual({
      status: 'refused',
      error: 'refused to connect to hooks.rebind.test: it resolves to 127.0.0.1, a loopback address',
    });
    expect(target.requests).toHaveLength(0);
    expect((await deliveryRow(resourceId)).status).toBe('refused');
  });

  it('refuses a URL that is not http(s) even with private networks allowed', async () => {
    const { send } = sender();
    const resourceId = newId('resp');
    const outcome = await send({
      resourceId,
      accountId: suite.accountId,
      url: 'file:///etc/passwd',
      payload: payloadFor(resourceId),
    });
    expect(outcome).toEqual({ status: 'refused', error: 'the webhook URL must use http or https.' });
    expect((await deliveryRow(resourceId)).status).toBe('refused');
  });
});
