import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { priceCall } from '../../src/billing/pricing';
import { expectCarried } from '../support/carry';
import { useTestApp } from '../support/harness';
import {
  balanceOf,
  createResponse,
  debitsOf,
  openCreateStream,
  openResumeStream,
  readUntilFirstDelta,
  waitForFinal,
  ZERO_USAGE,
} from './helpers';

/** Spec: Response usage.cost, Transaction, Webhook; DECISIONS 10-12, 22. */
describe('responses: billing', () => {
  const suite = useTestApp({ balance: 10_000 });
  let price: { unit: 'tokens'; count: number; input: number; output: number };
  beforeAll(async () => {
    price = (await suite.app.request('GET', '/v2/models/prices', { key: suite.key })).body['dev-echo'];
  });

  const debitsFor = async (responseId: string) =>
    (await debitsOf(suite.app, suite.accountId)).filter(
      (debit) => (debit.metadata as Record<string, unknown>).response_id === responseId,
    );

  it('usage.cost is the catalog price of the reported tokens; one debit of ceil(cost) moves the balance', async () => {
    expect(price).toEqual({
      unit: 'tokens',
      count: expect.any(Number),
      input: expect.any(Number),
      output: expect.any(Number),
    });
    const balanceBefore = await balanceOf(suite.app, suite.key);
    const reply = await createResponse(suite.app, suite.key, { input: '/words 37', background: false });
    expect(reply.body.status).toBe('completed');
    const usage = reply.body.usage;
    expect(usage).toMatchObject({ input_tokens: 2, output_tokens: 37, total_tokens: 39 });

    const expected = priceCall(price, { input: 2, output: 37 });
    expect(usage.cost).toBe(expected.cost);
    // The same figure by hand: kopecks per `count` tokens.
    expect(usage.cost).toBeCloseTo((2 * price.input + 37 * price.output) / price.count, 9);
    expect(expected.amount).toBe(Math.ceil(usage.cost));

    const debits = await debitsFor(reply.body.id);
    expect(debits).toHaveLength(1);
    expect(debits[0]).toMatchObject({
      type: 'debit',
      metadata: {
        source: 'api',
        vendor: 'dev',
        model: 'dev-echo',
        service: 'responses',
        response_id: reply.body.id,
        cost: usage.cost,
      },
      usage: { prompt_tokens: 2, completion_tokens: 37, total_tokens: 39 },
    });
    // Whole kopecks: the cost less what the suite's account had paid ahead, rounded up.
    expectCarried(debits[0], usage.cost);
    expect(await balanceOf(suite.app, suite.key)).toBe(balanceBefore - debits[0].amount);

    // The transaction is what the organization API shows.
    const listed = await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key });
    const transaction = listed.body.transactions.find((entry: any) => entry.id === debits[0].id);
    expect(transaction).toMatchObject({
      type: 'debit',
      amount: debits[0].amount,
      metadata: { service: 'responses', response_id: reply.body.id, cost: usage.cost },
    });
  });

  it('bills every Response exactly once, whatever the mode', async () => {
    const balanceBefore = await balanceOf(suite.app, suite.key);
    const background = await createResponse(suite.app, suite.key, { input: 'one two three' });
    const sync = await createResponse(suite.app, suite.key, { input: 'four five', background: false });
    const streamed = (await (await openCreateStream(suite.app, suite.key, { input: '/words 5' })).readAll()).at(-1)!
      .data.response;
    const finals = [await waitForFinal(suite.app, suite.key, background.body.id), sync.body, streamed];
    let charged = 0;
    for (const response of finals) {
      expect(response.status).toBe('completed');
      const debits = await debitsFor(response.id);
      expect(debits).toHaveLength(1);
      expectCarried(
        debits[0],
        priceCall(price, { input: response.usage.input_tokens, output: response.usage.output_tokens }).cost,
      );
      charged += debits[0].amount;
    }
    expect(await balanceOf(suite.app, suite.key)).toBe(balanceBefore - charged);
  });

  it('a failed generation (/error) ends failed with error {code, message} and is not billed', async () => {
    const balanceBefore = await balanceOf(suite.app, suite.key);
    const failed = await createResponse(suite.app, suite.key, { input: '/error', background: false });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: 'failed', output: [] });
    expect(failed.body.error).toEqual({
      code: expect.stringMatching(/^[a-z]+\.[a-z_]+$/),
      message: expect.any(String),
      // OpenAI's fields, which the Vercel AI SDK requires of a failed Response (api-decisions 13).
      type: 'server_error',
      param: null,
    });
    expect(failed.body.error.code).toBe('response.execution_failed');
    expect(failed.body.usage).toEqual(ZERO_USAGE);

    const streamed = await (await openCreateStream(suite.app, suite.key, { input: '/error' })).readAll();
    expect(streamed.map((event) => event.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.failed',
    ]);
    expect(streamed.at(-1)!.data.response).toMatchObject({
      status: 'failed',
      error: { code: 'response.execution_failed' },
    });

    expect(await debitsFor(failed.body.id)).toEqual([]);
    expect(await debitsFor(streamed[0].data.response.id)).toEqual([]);
    expect(await balanceOf(suite.app, suite.key)).toBe(balanceBefore);
  });
});

interface ReceivedHook {
  path: string;
  method: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A webhook receiver on loopback that records every request and lets a test wait for one per path. */
async function startReceiver() {
  const received: ReceivedHook[] = [];
  const waiting = new Map<string, (hook: ReceivedHook) => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const hook = {
        path: req.url ?? '',
        method: req.method ?? '',
        headers: req.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      };
      received.push(hook);
      res.writeHead(204).end();
      waiting.get(hook.path)?.(hook);
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    /** Resolves with the first request to `path` (already received or still to come). */
    next(path: string): Promise<ReceivedHook> {
      const already = received.find((hook) => hook.path === path);
      return already ? Promise.resolve(already) : new Promise((resolve) => waiting.set(path, resolve));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('responses: webhook', () => {
  const suite = useTestApp();
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  /** The flow has ended (nothing can send anything more) and the delivery is recorded. */
  const settled = async (responseId: string) => {
    await suite.app.untilJobEnded({ kind: 'response', id: responseId });
    // The flow only claims the webhook; the process's webhook dispatcher sends it and records the outcome.
    await suite.app.runtime.deps.webhooks.idle();
    return suite.app.db.selectFrom('webhook_deliveries').selectAll().where('resource_id', '=', responseId).execute();
  };
  const hooksTo = (path: string) => receiver.received.filter((hook) => hook.path === path);

  it('POSTs once at the final status: response_id, conversation_id, status, status_at', async () => {
    const conversation = (await suite.app.request('POST', '/v2/conversations', { key: suite.key, body: {} })).body.id;
    const path = '/hooks/linked?token=s3cret';
    const startedAt = Math.floor(Date.now() / 1000);
    const created = await createResponse(suite.app, suite.key, {
      input: 'notify me',
      conversation,
      metadata: { webhook_url: receiver.url + path },
    });
    expect(created.body.metadata).toEqual({ webhook_url: receiver.url + path });

    const hook = await receiver.next(path);
    expect(hook.method).toBe('POST');
    expect(hook.headers['content-type']).toMatch(/^application\/json/);
    expect(hook.body).toEqual({
      response_id: created.body.id,
      conversation_id: conversation,
      status: 'completed',
      status_at: expect.any(Number),
    });
    expect(hook.body.status_at).toBeGreaterThanOrEqual(startedAt);
    expect(hook.body.status_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    // The body does not carry the answer; GET does.
    const final = await suite.app.request('GET', `/v2/responses/${created.body.id}`, { key: suite.key });
    expect(final.body.status).toBe('completed');

    const deliveries = await settled(created.body.id);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ status: 'delivered', response_status: 204 });
    // Reading the Response again sends nothing.
    await suite.app.request('GET', `/v2/responses/${created.body.id}`, { key: suite.key });
    await suite.app.request('GET', `/v2/responses/${created.body.id}?stream=true`, { key: suite.key });
    expect(hooksTo(path)).toHaveLength(1);
    expect(await settled(created.body.id)).toHaveLength(1);
  });

  it('omits conversation_id when unlinked and reports failed and cancelled outcomes too', async () => {
    const failedPath = '/hooks/failed';
    const failed = await createResponse(suite.app, suite.key, {
      input: '/error',
      background: false,
      metadata: { webhook_url: receiver.url + failedPath },
    });
    expect((await receiver.next(failedPath)).body).toEqual({
      response_id: failed.body.id,
      status: 'failed',
      status_at: expect.any(Number),
    });

    const cancelledPath = '/hooks/cancelled';
    const running = await createResponse(suite.app, suite.key, {
      input: '/delay 100 /words 300',
      metadata: { webhook_url: receiver.url + cancelledPath },
    });
    await readUntilFirstDelta(await openResumeStream(suite.app, suite.key, running.body.id));
    await suite.app.request('POST', `/v2/responses/${running.body.id}/cancel`, { key: suite.key });
    expect((await receiver.next(cancelledPath)).body).toEqual({
      response_id: running.body.id,
      status: 'cancelled',
      status_at: expect.any(Number),
    });

    for (const [path, id] of [
      [failedPath, failed.body.id],
      [cancelledPath, running.body.id],
    ]) {
      expect(await settled(id)).toHaveLength(1);
      expect(hooksTo(path)).toHaveLength(1);
    }
  });

  it('sends nothing without a webhook_url', async () => {
    const before = receiver.received.length;
    const plain = await createResponse(suite.app, suite.key, { input: 'quiet please', background: false });
    expect(await settled(plain.body.id)).toEqual([]);
    expect(receiver.received.length).toBe(before);
  });
});
