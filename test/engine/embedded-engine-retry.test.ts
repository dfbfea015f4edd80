import { createActivities } from '../../activities';
import { createEmbeddedEngine } from '../../src/engine/embedded-engine';
import type { Engine } from '../../src/engine/engine';
import { TestApp } from '../support/harness';
import { pollUntil } from '../responses/helpers';

/**
 * A job whose activities fail (a database hiccup, say) is retried with backoff; after the last attempt the
 * Response is ended `failed` instead of staying queued with clients waiting on it forever.
 */
describe('embedded engine: failed jobs', () => {
  let app: TestApp;
  let key: string;
  let engine: Engine | undefined;

  beforeAll(async () => {
    app = await TestApp.start();
    ({ key } = await app.createAccount());
    // Only the engine under test may run jobs.
    await app.runtime.deps.engine.stop();
  });
  afterEach(async () => {
    await engine?.stop();
    engine = undefined;
  });
  afterAll(() => app.close());

  function startEngine(failStarts: number) {
    const { db, bus, logger, events, webhooks, catalog, providers } = app.runtime.deps;
    const real = createActivities({ db, logger, events, webhooks, catalog, providers });
    let calls = 0;
    const activities = {
      ...real,
      startResponse: async (input: { responseId: string }) => {
        calls++;
        if (calls <= failStarts) throw new Error(`database unavailable (call ${calls})`);
        return real.startResponse(input);
      },
    };
    engine = createEmbeddedEngine({ db, bus, logger, activities, concurrency: 4, exclusiveStorage: false, retryBaseMs: 5, pollIntervalMs: 50 });
    return { engine, calls: () => calls };
  }

  /** The job row is closed just after the final event is written: wait for that, bounded. */
  const jobSettled = (id: string) =>
    pollUntil(
      () => app.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
      (job) => job.status === 'completed' || job.status === 'failed',
    );

  async function finalOf(id: string) {
    const reply = await fetch(`${app.baseUrl}/v2/responses/${id}?stream=true`, { headers: { 'x-auth-token': key } });
    const blocks = (await reply.text()).split('\n\n').filter((block) => block.includes('data: '));
    return JSON.parse(blocks.at(-1)!.split('\n').find((line) => line.startsWith('data: '))!.slice(6));
  }

  it('retries a failed attempt and completes', async () => {
    const created = await app.request('POST', '/v2/responses', { key, body: { model: 'dev-echo', input: 'after two failures' } });
    const { engine, calls } = startEngine(2);
    await engine.start();
    const final = await finalOf(created.body.id);
    expect(final.type).toBe('response.completed');
    expect(final.response.output[0].content[0].text).toBe('after two failures');
    expect(calls()).toBe(3);
    expect(await jobSettled(created.body.id)).toMatchObject({ status: 'completed', attempts: 3 });
  });

  it('abandons after the last attempt with a failed Response, not a stuck one', async () => {
    const created = await app.request('POST', '/v2/responses', { key, body: { model: 'dev-echo', input: 'never starts' } });
    const { engine, calls } = startEngine(Number.POSITIVE_INFINITY);
    await engine.start();
    const final = await finalOf(created.body.id);
    expect(final.type).toBe('response.failed');
    expect(final.response.error.code).toBe('response.execution_failed');
    expect(final.response.usage).toMatchObject({ input_tokens: 0, output_tokens: 0, cost: 0 });
    expect(calls()).toBe(5);
    expect(await jobSettled(created.body.id)).toMatchObject({ status: 'failed', attempts: 5, last_error: expect.stringContaining('database unavailable') });
    const got = await app.request('GET', `/v2/responses/${created.body.id}`, { key });
    expect(got.body.status).toBe('failed');
  });
});
