import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createResponse, waitForFinal } from '../responses/helpers';
import { postgresUrl, TestApp } from '../support/harness';

/**
 * A receiver that never answers, flooded by account A, does not slow account B's background Responses: webhooks
 * are sent by their own dispatcher (per-account places), not inside the jobs' slots. Before, each of A's webhooks
 * held a job slot for the whole timeout, and B's Responses waited behind them (138 ms → 8 s in the audit).
 *
 * The claim is made against the webhook timeout, not against B's time alone: with the slots taken by A's webhooks,
 * B's Responses could not finish before one of them timed out, whatever the machine's load; without, they finish in
 * a fraction of it even on a loaded machine (2.8 s on a CI machine running two Temporal test files at once, against
 * 0.2 s alone, which is why a bound of "alone + 1 s" failed there). The timeout is long enough for that margin, and
 * the flood (as many as the engine's slots, so that the old code would have taken them all) small enough that its
 * deliveries, two at a time, end in two timeouts.
 */
describe('a hanging webhook receiver of one account', () => {
  const ENGINE_CONCURRENCY = 4;
  const WEBHOOK_TIMEOUT_MS = 8000;
  const PER_ACCOUNT = 2;
  const FLOOD = ENGINE_CONCURRENCY;
  let app: TestApp;
  let receiver: http.Server;
  let receiverUrl: string;
  let open = 0;
  let maxOpen = 0;
  const seen: string[] = [];

  beforeAll(async () => {
    // Reads each request and never answers; counts the requests it holds open at once.
    receiver = http.createServer((req) => {
      open++;
      maxOpen = Math.max(maxOpen, open);
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => seen.push(JSON.parse(Buffer.concat(chunks).toString('utf8')).response_id));
      req.socket.once('close', () => open--);
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    app = await TestApp.start({
      env: {
        OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
        ENGINE_CONCURRENCY: String(ENGINE_CONCURRENCY),
        WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
        WEBHOOK_CONCURRENCY_PER_ACCOUNT: String(PER_ACCOUNT),
      },
    });
  });
  afterAll(async () => {
    await app?.close();
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  /** Creates `count` background Responses of `key` at once; answers the slowest one's time to its final status. */
  async function slowestCompletion(
    key: string,
    count: number,
    metadata: Record<string, string> = {},
  ): Promise<{ ms: number; ids: string[] }> {
    const started = performance.now();
    const ids = await Promise.all(
      Array.from({ length: count }, async () => {
        const created = await createResponse(app, key, { input: 'hello', background: true, metadata });
        expect(created.status).toBe(200);
        const final = await waitForFinal(app, key, created.body.id);
        expect(final.status).toBe('completed');
        return created.body.id as string;
      }),
    );
    return { ms: performance.now() - started, ids };
  }

  it("B's background Responses finish as fast with A's flood of hanging webhooks as without; A's webhooks go out once each, two at a time", async () => {
    const a = await app.createAccount({ balance: 10_000_000 });
    const b = await app.createAccount({ balance: 10_000_000 });
    const baseline = await slowestCompletion(b.key, 4);

    const flood = await slowestCompletion(a.key, FLOOD, { webhook_url: receiverUrl });
    // Every slot would now be held by A's webhooks for WEBHOOK_TIMEOUT_MS (and then by the next ones) if they ran in jobs.
    const during = await slowestCompletion(b.key, 4);
    expect(seen.length).toBeGreaterThan(0);
    expect(during.ms).toBeLessThan(WEBHOOK_TIMEOUT_MS);

    await app.runtime.deps.webhooks.idle();
    expect(maxOpen).toBeLessThanOrEqual(PER_ACCOUNT);
    expect(seen.sort()).toEqual([...flood.ids].sort());
    const rows = await app.db
      .selectFrom('webhook_deliveries')
      .select(['resource_id', 'status', 'error'])
      .where('account_id', '=', a.accountId)
      .execute();
    expect(rows).toHaveLength(FLOOD);
    for (const row of rows)
      expect(row).toMatchObject({ status: 'failed', error: `timed out after ${WEBHOOK_TIMEOUT_MS} ms` });
    // eslint-disable-next-line no-console
    console.log(
      `B's 4 background Responses: ${Math.round(baseline.ms)} ms alone, ${Math.round(during.ms)} ms during A's flood of ${FLOOD} hanging webhooks`,
    );
  }, 90_000);

  it('a delivery claimed and never attempted (its process ended while it waited) is sent by a later start, once; an attempted one never again', async () => {
    const account = await app.createAccount();
    const row = (id: string, attempted: boolean) => ({
      id: `wh_left_${id}`,
      resource_id: `resp_left_${id}`,
      account_id: account.accountId,
      url: receiverUrl,
      payload: JSON.stringify({ response_id: `resp_left_${id}`, status: 'completed' }),
      status: 'pending' as const,
      attempted_at: attempted ? new Date() : null,
    });
    await app.db
      .insertInto('webhook_deliveries')
      .values([row('waiting', false), row('attempted', true)])
      .execute();
    const before = seen.length;
    const dispatcher = app.runtime.deps.webhooks;
    expect(await dispatcher.sendLeftOver(0)).toBe(1);
    // Queued already, or taken: not queued twice.
    await dispatcher.sendLeftOver(0);
    await dispatcher.idle();
    expect(seen.slice(before)).toEqual(['resp_left_waiting']);
    const stored = await app.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status'])
      .where('account_id', '=', account.accountId)
      .orderBy('id')
      .execute();
    expect(stored).toEqual([
      { id: 'wh_left_attempted', status: 'pending' },
      { id: 'wh_left_waiting', status: 'failed' },
    ]);
  }, 30_000);
});

/**
 * On Postgres, replicas share the deliveries: one claimed by a process that then ended (or was drained) before
 * sending it must not wait for the next start-up; whichever process sweeps next sends it, once.
 */
(postgresUrl ? describe : describe.skip)('a webhook left over by another replica', () => {
  let app: TestApp;
  let receiver: http.Server;
  let receiverUrl: string;
  const arrived: Array<(responseId: string) => void> = [];
  const received: string[] = [];

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const responseId = JSON.parse(Buffer.concat(chunks).toString('utf8')).response_id as string;
        received.push(responseId);
        arrived.splice(0).forEach((resolve) => resolve(responseId));
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    app = await TestApp.start({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_LEFT_OVER_AFTER_MS: '400' } });
  });
  afterAll(async () => {
    await app?.close();
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  it('is sent by a running process once it is older than WEBHOOK_LEFT_OVER_AFTER_MS, without a restart, once', async () => {
    const account = await app.createAccount();
    const next = new Promise<string>((resolve) => arrived.push(resolve));
    // What a replica that claimed it and died leaves: pending, never attempted (written after this process started).
    await app.db
      .insertInto('webhook_deliveries')
      .values({
        id: 'wh_replica_left',
        resource_id: 'resp_replica_left',
        account_id: account.accountId,
        url: receiverUrl,
        payload: JSON.stringify({ response_id: 'resp_replica_left', status: 'completed' }),
        status: 'pending',
        attempted_at: null,
      })
      .execute();
    expect(await next).toBe('resp_replica_left');
    await app.runtime.deps.webhooks.idle();
    const stored = await app.db
      .selectFrom('webhook_deliveries')
      .select(['status', 'response_status'])
      .where('id', '=', 'wh_replica_left')
      .executeTakeFirstOrThrow();
    expect(stored).toEqual({ status: 'delivered', response_status: 200 });
    // Later sweeps find it attempted: never sent again.
    expect(await app.runtime.deps.webhooks.sendLeftOver(0)).toBe(0);
    expect(received).toEqual(['resp_replica_left']);
  }, 30_000);
});
