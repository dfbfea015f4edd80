import { pollUntil } from '../responses/helpers';
import type { Activities } from '../../src/engine/job-kinds';
import { useEngineUnderTest } from './engine-under-test';

/**
 * A job whose activities fail (a database hiccup, say) is retried with backoff; after the last attempt the
 * Response is ended `failed` instead of staying queued with clients waiting on it forever.
 */
describe('embedded engine: failed jobs', () => {
  const under = useEngineUnderTest();
  const app = () => under.app;

  /** An engine whose first step (the start and the vendor call) fails `failStarts` times (a database hiccup), counting its calls. */
  async function startEngine(failStarts: number) {
    let calls = 0;
    await under.start((real) => ({
      ...real,
      // The engine passes its activity context second (cancellation, attempt): handed on as it came.
      startAndCallProvider: async (...args: Parameters<Activities['startAndCallProvider']>) => {
        calls++;
        if (calls <= failStarts) throw new Error(`database unavailable (call ${calls})`);
        return real.startAndCallProvider(...args);
      },
    }));
    return { calls: () => calls };
  }

  /** The job row is closed just after the final event is written: wait for that, bounded. */
  const jobSettled = (id: string) =>
    pollUntil(
      () => app().db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
      (job) => job.status === 'completed' || job.status === 'failed',
    );

  async function finalOf(id: string) {
    const reply = await fetch(`${app().baseUrl}/v2/responses/${id}?stream=true`, {
      headers: { 'x-auth-token': under.key },
    });
    const blocks = (await reply.text()).split('\n\n').filter((block) => block.includes('data: '));
    return JSON.parse(
      blocks
        .at(-1)!
        .split('\n')
        .find((line) => line.startsWith('data: '))!
        .slice(6),
    );
  }

  it('retries a failed attempt and completes', async () => {
    const created = await app().request('POST', '/v2/responses', {
      key: under.key,
      body: { model: 'dev-echo', input: 'after two failures' },
    });
    const { calls } = await startEngine(2);
    const final = await finalOf(created.body.id);
    expect(final.type).toBe('response.completed');
    expect(final.response.output[0].content[0].text).toBe('after two failures');
    expect(calls()).toBe(3);
    expect(await jobSettled(created.body.id)).toMatchObject({ status: 'completed', attempts: 3 });
  });

  it('does not run again a job whose attempts all ended with the process: the Response fails instead', async () => {
    // As a restart finds it after five attempts that each killed the process (say, out of memory): running,
    // attempts 5, its lease expired.
    const created = await app().request('POST', '/v2/responses', {
      key: under.key,
      body: { model: 'dev-echo', input: 'poison' },
    });
    await app()
      .db.updateTable('jobs')
      .set({
        status: 'running',
        attempts: 5,
        lease_owner: 'a-dead-process',
        lease_expires_at: new Date(Date.now() - 1000),
      })
      .where('id', '=', created.body.id)
      .execute();
    const { calls } = await startEngine(0);
    const final = await finalOf(created.body.id);
    expect(final.type).toBe('response.failed');
    expect(final.response.error.code).toBe('response.execution_failed');
    expect(calls()).toBe(0);
    expect(await jobSettled(created.body.id)).toMatchObject({
      status: 'failed',
      attempts: 6,
      last_error: expect.stringContaining('ended with the process'),
    });
  });

  it('abandons after the last attempt with a failed Response, not a stuck one', async () => {
    const created = await app().request('POST', '/v2/responses', {
      key: under.key,
      body: { model: 'dev-echo', input: 'never starts' },
    });
    const { calls } = await startEngine(Number.POSITIVE_INFINITY);
    const final = await finalOf(created.body.id);
    expect(final.type).toBe('response.failed');
    expect(final.response.error.code).toBe('response.execution_failed');
    expect(final.response.usage).toMatchObject({ input_tokens: 0, output_tokens: 0, cost: 0 });
    expect(calls()).toBe(5);
    expect(await jobSettled(created.body.id)).toMatchObject({
      status: 'failed',
      attempts: 5,
      last_error: expect.stringContaining('database unavailable'),
    });
    const got = await app().request('GET', `/v2/responses/${created.body.id}`, { key: under.key });
    expect(got.body.status).toBe('failed');
  });
});
