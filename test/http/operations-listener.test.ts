import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { createHttpServer } from '../../src/http/server';
import { ADMIN_TOKEN, TestApp } from '../support/harness';

/**
 * The operators' listener (OPS_PORT): health, readiness and metrics on a port of their own, so that a load
 * balancer's check on a new connection is not queued behind the API's new connections. libuv accepts one
 * connection per listener per turn of the event loop; the test counts turns, not milliseconds.
 */
describe('the operators listener', () => {
  let app: TestApp;
  let operations: http.Server;
  let operationsUrl: string;
  beforeAll(async () => {
    app = await TestApp.start();
    operations = createHttpServer(app.runtime.operationsApp, app.runtime.deps.config.http).listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => operations.once('listening', resolve));
    operationsUrl = `http://127.0.0.1:${(operations.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    operations.closeAllConnections();
    await new Promise<void>((resolve) => operations.close(() => resolve()));
    await app.close();
  });

  it('serves health, readiness and metrics, and nothing of the API or the admin area', async () => {
    expect(await (await fetch(`${operationsUrl}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${operationsUrl}/readyz`)).json()).toEqual({ status: 'ready' });
    expect((await fetch(`${operationsUrl}/metrics`)).status).toBe(401);
    const metrics = await fetch(`${operationsUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('switchyard_http_request_duration_seconds');

    const { key } = await app.createAccount();
    const api = await fetch(`${operationsUrl}/v2/models`, { headers: { 'x-auth-token': key } });
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({ error: { code: 'request.not_found', message: expect.any(String) } });
    const admin = await fetch(`${operationsUrl}/admin/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{"name":"x"}',
    });
    expect(admin.status).toBe(404);
  });

  it('answers a check on a new connection within a few turns of the event loop while hundreds of new API connections wait', async () => {
    const apiPort = Number(new URL(app.baseUrl).port);
    // Turns of the event loop, counted by a chain of setImmediate callbacks (one per turn).
    let turns = 0;
    let counting = true;
    const count = () => {
      turns++;
      if (counting) setImmediate(count);
    };
    // The crowd: 300 connections to the API's listener, each established by the kernel and queued for accept.
    const crowd = Array.from({ length: 300 }, () => net.connect(apiPort, '127.0.0.1').on('error', () => undefined));
    await Promise.all(crowd.map((socket) => new Promise((resolve) => socket.once('connect', resolve))));
    setImmediate(count);
    const answeredAt = (url: string) =>
      new Promise<number>((resolve, reject) => {
        http
          .get(url, { agent: false }, (reply) => {
            reply.resume();
            reply.once('end', () => resolve(turns));
          })
          .once('error', reject);
      });
    const [onOperations, onApi] = await Promise.all([
      answeredAt(`${operationsUrl}/healthz`),
      answeredAt(`${app.baseUrl}/healthz`),
    ]);
    counting = false;
    crowd.forEach((socket) => socket.destroy());
    // The premise: behind 300 queued connections, a new API connection waits for about 300 turns. Should libuv
    // ever accept a whole queue in one turn, this fails and the separate listener is no longer needed for this.
    expect(onApi).toBeGreaterThan(250);
    expect(onOperations).toBeLessThan(20);
  });
});
