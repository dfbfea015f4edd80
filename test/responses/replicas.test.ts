import { TestApp, postgresUrl } from '../support/harness';
import { SseStream } from '../support/sse';

/**
 * Two API replicas on one Postgres: a stream or a cancel served by the replica that does not run the
 * Response must work through LISTEN/NOTIFY. PGlite is one process by definition, so this runs on Postgres.
 */
const onPostgres = postgresUrl ? describe : describe.skip;
if (!postgresUrl) console.info('replicas.test.ts skipped: set TEST_DATABASE_URL (npm run test:postgres) to run it');

/**
 * The replica that is not running the Response (after it was claimed). Under Temporal only the first runs a worker,
 * so the second is the one.
 */
async function otherReplica(apps: TestApp[], id: string): Promise<TestApp> {
  if (apps[0].engine === 'temporal') return apps[1];
  for (;;) {
    const job = await apps[0].db
      .selectFrom('jobs')
      .select('lease_owner')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    if (job.lease_owner) return apps.find((app) => app.runtime.owner !== job.lease_owner)!;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function readUntilFinal(app: TestApp, key: string, id: string) {
  const stream = await SseStream.open(`${app.baseUrl}/v2/responses/${id}?stream=true`, { key });
  return (await stream.readAll()).map((event) => event.data);
}

onPostgres('replicas on one Postgres', () => {
  let a: TestApp;
  let b: TestApp;
  let key: string;
  beforeAll(async () => {
    a = await TestApp.start();
    b = await TestApp.start({ schema: a.schema, worker: false });
    ({ key } = await a.createAccount());
  });
  afterAll(async () => {
    await b.stop();
    await a.close();
  });

  it('streams live from another replica, deltas in order and without gaps', async () => {
    const created = await a.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: '/delay 30 one two three four five six seven eight' },
    });
    const events = await readUntilFinal(await otherReplica([a, b], created.body.id), key, created.body.id);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.at(-1).type).toBe('response.completed');
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta)
      .join('');
    expect(text).toBe('one two three four five six seven eight');
  });

  it('a key disabled on one replica is refused at once by another that had its row cached', async () => {
    // The second replica keeps key rows for a minute: only the bus announcement can make it refuse in time.
    const caching = await TestApp.start({ schema: a.schema, env: { AUTH_CACHE_MS: '60000' } });
    try {
      const account = await a.createAccount();
      const second = await a.request('POST', '/v2/organization/keys', {
        key: account.key,
        body: { name: 'to disable' },
      });
      expect((await caching.request('GET', '/v2/organization/balance', { key: second.body.key })).status).toBe(200);
      expect(
        (await a.request('POST', `/v2/organization/keys/${second.body.id}/disable`, { key: account.key })).status,
      ).toBe(200);
      // The notification crosses processes asynchronously: wait for it (bounded well below the cache's minute).
      const deadline = Date.now() + 5_000;
      let status = 200;
      while (status === 200 && Date.now() < deadline) {
        status = (await caching.request('GET', '/v2/organization/balance', { key: second.body.key })).status;
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(status).toBe(403);
      // A change to the account's limits reaches it the same way.
      await a.admin('PATCH', `/admin/accounts/${account.accountId}`, { limits: { requests_per_minute: 1 } });
      const limitedBy = Date.now() + 5_000;
      let codes: number[] = [];
      while (Date.now() < limitedBy) {
        codes = [];
        for (let index = 0; index < 3; index++)
          codes.push((await caching.request('GET', '/v2/organization/balance', { key: account.key })).status);
        if (codes.includes(429)) break;
      }
      expect(codes).toContain(429);
    } finally {
      await caching.stop();
    }
  });

  it('cancels from another replica', async () => {
    const created = await a.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: `/delay 200 ${'word '.repeat(200)}` },
    });
    // Wait until it streams, then cancel through the replica that does not run it.
    const started = await SseStream.open(`${a.baseUrl}/v2/responses/${created.body.id}?stream=true`, { key });
    await started.readUntil((event) => event.event === 'response.output_text.delta');
    started.abort();
    const other = await otherReplica([a, b], created.body.id);
    const cancelled = await other.request('POST', `/v2/responses/${created.body.id}/cancel`, { key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', output: [] });
  });
});
