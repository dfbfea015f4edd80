import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { useTestApp } from '../support/harness';
import { startReceiver, type Receiver } from '../webhooks/receiver';
import {
  createResponse,
  debitsOf,
  openCreateStream,
  openResumeStream,
  readUntilFirstDelta,
  waitForFinal,
  ZERO_USAGE,
} from './helpers';

/** Spec: States and transitions (cancel), Deleted Response; DECISIONS 12, 15. */
describe('responses: cancel and delete', () => {
  const suite = useTestApp();

  const LONG = '/delay 100 /words 300'; // 30 s: only a cancel ends it within a test

  it('cancels an in_progress Response: cancelled, empty output, zero usage, the open stream ends with response.cancelled', async () => {
    const stream = await openCreateStream(suite.app, suite.key, { input: LONG });
    const head = await readUntilFirstDelta(stream);
    const id = head[0].data.response.id;

    const cancelled = await suite.app.request('POST', `/v2/responses/${id}/cancel`, { key: suite.key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({
      id,
      object: 'response',
      status: 'cancelled',
      output: [],
      usage: ZERO_USAGE,
      error: null,
    });

    const rest = await stream.readAll();
    const last = rest.at(-1)!;
    expect(last.event).toBe('response.cancelled');
    expect(last.data.response).toEqual(cancelled.body);
    expect(last.data.sequence_number).toBe(head.length + rest.length - 1);

    // Idempotent: cancelling again returns it unchanged.
    const again = await suite.app.request('POST', `/v2/responses/${id}/cancel`, { key: suite.key });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(cancelled.body);
    expect((await suite.app.request('GET', `/v2/responses/${id}`, { key: suite.key })).body).toEqual(cancelled.body);

    // Not billed (DECISIONS 12: the dev vendor charges nothing for an interrupted call).
    const debits = await debitsOf(suite.app, suite.accountId);
    expect(debits.filter((debit) => (debit.metadata as Record<string, unknown>).response_id === id)).toEqual([]);
  });

  it('refuses to cancel a completed Response with 400 response.not_cancellable', async () => {
    const done = await createResponse(suite.app, suite.key, { input: 'all done', background: false });
    expect(done.body.status).toBe('completed');
    const reply = await suite.app.request('POST', `/v2/responses/${done.body.id}/cancel`, { key: suite.key });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error: { code: 'response.not_cancellable', message: expect.any(String) } });
    expect((await suite.app.request('GET', `/v2/responses/${done.body.id}`, { key: suite.key })).body).toEqual(
      done.body,
    );
  });

  it('refuses to cancel a failed Response too', async () => {
    const failed = await createResponse(suite.app, suite.key, { input: '/error', background: false });
    expect(failed.body.status).toBe('failed');
    const reply = await suite.app.request('POST', `/v2/responses/${failed.body.id}/cancel`, { key: suite.key });
    expect([reply.status, reply.body.error.code]).toEqual([400, 'response.not_cancellable']);
  });

  it('deleting a running Response cancels it first; then it is gone', async () => {
    const created = await createResponse(suite.app, suite.key, { input: LONG });
    const id = created.body.id;
    const stream = await openResumeStream(suite.app, suite.key, id);
    await readUntilFirstDelta(stream);

    const deleted = await suite.app.request('DELETE', `/v2/responses/${id}`, { key: suite.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, object: 'response.deleted', deleted: true });
    const rest = await stream.readAll();
    expect(rest.at(-1)!.event).toBe('response.cancelled');

    expect((await suite.app.request('GET', `/v2/responses/${id}`, { key: suite.key })).status).toBe(404);
    expect((await suite.app.request('POST', `/v2/responses/${id}/cancel`, { key: suite.key })).status).toBe(404);
    expect((await suite.app.request('DELETE', `/v2/responses/${id}`, { key: suite.key })).status).toBe(404);
    const row = await suite.app.db
      .selectFrom('responses')
      .select(['status', 'deleted_at'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('cancelled');
    expect(row.deleted_at).not.toBeNull();
  });

  it('deletes a finished Response', async () => {
    const done = await createResponse(suite.app, suite.key, { input: 'keep me briefly', background: false });
    const id = done.body.id;
    const deleted = await suite.app.request('DELETE', `/v2/responses/${id}`, { key: suite.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, object: 'response.deleted', deleted: true });
    const get = await suite.app.request('GET', `/v2/responses/${id}`, { key: suite.key });
    expect(get.status).toBe(404);
    expect(get.body.error.code).toBe('response.not_found');
    expect((await suite.app.request('GET', `/v2/responses/${id}?stream=true`, { key: suite.key })).status).toBe(404);
    // The generation was billed before the delete; deleting does not refund or bill again.
    const debits = await debitsOf(suite.app, suite.accountId);
    expect(debits.filter((debit) => (debit.metadata as Record<string, unknown>).response_id === id)).toHaveLength(1);
  });
});

describe('responses: cancel while queued (one engine slot)', () => {
  const suite = useTestApp({ app: { env: { ENGINE_CONCURRENCY: '1' } } });

  it('a queued Response is cancelled at once, with empty output, and never runs', async () => {
    const first = await createResponse(suite.app, suite.key, { input: '/delay 100 /words 300' });
    const firstStream = await openResumeStream(suite.app, suite.key, first.body.id);
    await readUntilFirstDelta(firstStream); // the only slot is taken

    const second = await createResponse(suite.app, suite.key, { input: 'waiting my turn' });
    expect(second.body.status).toBe('queued');
    expect((await suite.app.request('GET', `/v2/responses/${second.body.id}`, { key: suite.key })).body.status).toBe(
      'queued',
    );
    const secondStream = await openResumeStream(suite.app, suite.key, second.body.id);

    const cancelled = await suite.app.request('POST', `/v2/responses/${second.body.id}/cancel`, { key: suite.key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({
      id: second.body.id,
      status: 'cancelled',
      output: [],
      usage: ZERO_USAGE,
      error: null,
    });
    const secondEvents = await secondStream.readAll();
    expect(secondEvents.map((event) => event.event)).toEqual(['response.created', 'response.cancelled']);
    expect(secondEvents.map((event) => event.data.sequence_number)).toEqual([0, 1]);
    // The first one is still generating: the cancel did not wait for the slot.
    expect((await suite.app.request('GET', `/v2/responses/${first.body.id}`, { key: suite.key })).body.status).toBe(
      'in_progress',
    );

    const firstCancelled = await suite.app.request('POST', `/v2/responses/${first.body.id}/cancel`, { key: suite.key });
    expect(firstCancelled.body).toMatchObject({ status: 'cancelled', output: [], usage: ZERO_USAGE });
    expect((await firstStream.readAll()).at(-1)!.event).toBe('response.cancelled');

    // Once the slot is free the queued job is settled without generating anything.
    const after = await waitForFinal(suite.app, suite.key, second.body.id);
    expect(after).toEqual(cancelled.body);
    expect(await debitsOf(suite.app, suite.accountId)).toEqual([]);
  });
});

/**
 * Issue 34: a Response cancelled while it waits for a slot gets its webhook at once, not when a slot frees. Every
 * slot holds a generation the vendor never finishes (ENGINE_CONCURRENCY: the embedded engine's jobs, a Temporal
 * worker's activities on the workflows' queue). On Temporal the cancel waited for a free activity slot: its reply
 * came after 30 s still `queued`, and the webhook only once a generation ended.
 */
describe('responses: the webhook of a cancel while queued goes out at once', () => {
  const SLOTS = 2;
  let fake: FakeVendorServer;
  let receiver: Receiver;
  const env: Record<string, string> = { ENGINE_CONCURRENCY: String(SLOTS) };
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    receiver = await startReceiver();
    Object.assign(env, { OPENAI_API_KEY: 'sk-openai-fake-test-key', OPENAI_BASE_URL: fake.baseURL });
  });
  const suite = useTestApp({ app: { env } });
  afterAll(async () => {
    await fake?.close();
    await receiver?.close();
  });

  it('every slot busy with a generation: the queued Response is cancelled and its webhook sent while they still run', async () => {
    fake.setDefault({ hang: true });
    const create = (body: Record<string, unknown>) =>
      suite.app.request('POST', '/v2/responses', { key: suite.key, body: { model: 'gpt-4.1-mini', ...body } });
    const busy: string[] = [];
    for (let slot = 0; slot < SLOTS; slot++) busy.push((await create({ input: `busy ${slot}` })).body.id);
    await fake.waitForRequests(SLOTS);

    const queued = await create({ input: 'waiting my turn', metadata: { webhook_url: `${receiver.url}/queued` } });
    expect(queued.body.status).toBe('queued');
    const stillQueued = await suite.app.request('GET', `/v2/responses/${queued.body.id}`, { key: suite.key });
    expect(stillQueued.body.status).toBe('queued');

    const started = Date.now();
    const cancelled = await suite.app.request('POST', `/v2/responses/${queued.body.id}/cancel`, { key: suite.key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: queued.body.id, status: 'cancelled', output: [], usage: ZERO_USAGE });
    const hook = await waitForRequest(receiver, '/queued', 10_000);
    expect(JSON.parse(hook.body)).toEqual({
      response_id: queued.body.id,
      status: 'cancelled',
      status_at: expect.any(Number),
    });
    expect(Date.now() - started).toBeLessThan(5_000);

    // The slots were still busy: both generations still run, their vendor calls open, nothing else reached the vendor.
    for (const id of busy)
      expect((await suite.app.request('GET', `/v2/responses/${id}`, { key: suite.key })).body.status).toBe(
        'in_progress',
      );
    expect(fake.requests).toHaveLength(SLOTS);
    expect(fake.requests.some((request) => request.clientAborted)).toBe(false);

    for (const id of busy) await suite.app.request('POST', `/v2/responses/${id}/cancel`, { key: suite.key });
    for (const id of busy) await suite.app.untilJobEnded({ kind: 'response', id });
  });
});

/** The first request the receiver got on `path`, waiting for it at most `timeoutMs`. */
async function waitForRequest(receiver: Receiver, path: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const request = receiver.requests.find((candidate) => candidate.path === path);
    if (request) return request;
    if (Date.now() > deadline) throw new Error(`no request on ${path} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
