import { sql } from 'kysely';
import { toRequest, parseArguments } from '../../src/admin/cli';
import { postgresUrl, TestApp } from '../support/harness';
import { pollUntil } from '../responses/helpers';

/** Per-account limits (api-decisions 26): set by operators, 429 request.rate_limited with Retry-After over them. */
describe('per-account limits', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start({ env: { LIMIT_CONCURRENT_JOBS: '50' } });
  });
  afterAll(async () => {
    await app.close();
  });

  /** A fixed one-minute window must not end in the middle of a test: start early in a minute. */
  async function atStartOfMinute(db = app.db) {
    const { rows } = await sql<{ second: number }>`select extract(second from now())::float as second`.execute(db);
    const second = Number(rows[0]!.second);
    if (second > 50) await new Promise((resolve) => setTimeout(resolve, (60 - second) * 1000 + 50));
  }

  const setLimits = (accountId: string, limits: Record<string, number | null>) =>
    app.admin('PATCH', `/admin/accounts/${accountId}`, { limits });

  it('operators set, show and reset limits; bad values are a 400', async () => {
    const { accountId } = await app.createAccount();
    expect((await app.admin('GET', `/admin/accounts/${accountId}`)).body.limits).toEqual({
      requests_per_minute: null,
      tokens_per_minute: null,
      concurrent_jobs: null,
    });
    const set = await setLimits(accountId, { requests_per_minute: 120, concurrent_jobs: 3 });
    expect(set.status).toBe(200);
    expect(set.body.limits).toEqual({ requests_per_minute: 120, tokens_per_minute: null, concurrent_jobs: 3 });
    expect((await setLimits(accountId, { requests_per_minute: null })).body.limits).toEqual({
      requests_per_minute: null,
      tokens_per_minute: null,
      concurrent_jobs: 3,
    });
    for (const limits of [
      { requests_per_minute: 0 },
      { tokens_per_minute: -5 },
      { concurrent_jobs: 1.5 },
      { requests_per_minute: '10' },
      { per_day: 5 },
    ]) {
      const reply = await app.admin('PATCH', `/admin/accounts/${accountId}`, { limits });
      expect([reply.status, reply.body.error.code]).toEqual([400, 'admin.invalid_request']);
    }
    expect(
      toRequest(
        parseArguments(['account', 'limits', accountId, '--requests-per-minute', '60', '--concurrent-jobs', 'default']),
      ),
    ).toEqual({
      method: 'PATCH',
      path: `/admin/accounts/${accountId}`,
      body: { limits: { requests_per_minute: 60, concurrent_jobs: null } },
    });
  });

  it('requests per minute: over the limit is 429 with Retry-After until the minute ends, in either error body', async () => {
    const { key, accountId } = await app.createAccount();
    await setLimits(accountId, { requests_per_minute: 3 });
    await atStartOfMinute();
    for (let index = 0; index < 3; index++)
      expect((await app.request('GET', '/v2/organization/balance', { key })).status).toBe(200);
    const refused = await app.request('GET', '/v2/organization/balance', { key });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('request.rate_limited');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const openai = await app.request('GET', '/openai/v1/models', { key });
    expect(openai.status).toBe(429);
    expect(openai.body.error).toMatchObject({ type: 'rate_limit_error', code: 'request.rate_limited' });
    // Other accounts are not affected.
    const other = await app.createAccount();
    expect((await app.request('GET', '/v2/organization/balance', { key: other.key })).status).toBe(200);
  });

  it('tokens per minute: refused once the last minute billed the limit', async () => {
    const { key, accountId } = await app.createAccount();
    await setLimits(accountId, { tokens_per_minute: 50 });
    const first = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: '/words 60', background: false },
    });
    expect(first.status).toBe(200);
    const refused = await app.request('POST', '/v2/chat/completions', {
      key,
      body: { model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect([refused.status, refused.body.error.code]).toEqual([429, 'request.rate_limited']);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Reading is not model work: still answered.
    expect((await app.request('GET', `/v2/responses/${first.body.id}`, { key })).status).toBe(200);
  });

  it('concurrent jobs: a Response over the limit is refused until one ends; the default applies without an own limit', async () => {
    const { key, accountId } = await app.createAccount();
    await setLimits(accountId, { concurrent_jobs: 1 });
    const running = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: '/delay 150 /words 3' },
    });
    expect(running.status).toBe(200);
    const refused = await app.request('POST', '/v2/responses', { key, body: { model: 'dev-echo', input: 'hi' } });
    expect([refused.status, refused.body.error.code]).toEqual([429, 'request.rate_limited']);
    expect(refused.headers.get('retry-after')).toBe('1');
    await pollUntil(
      async () => (await app.request('GET', `/v2/responses/${running.body.id}`, { key })).body.status,
      (status) => status === 'completed',
    );
    expect(
      (await app.request('POST', '/v2/responses', { key, body: { model: 'dev-echo', input: 'hi', background: false } }))
        .status,
    ).toBe(200);

    // LIMIT_CONCURRENT_JOBS=50 for an account without its own: 50 running, the 51st refused.
    const plain = await app.createAccount();
    // Long enough that none ends while a loaded machine is still creating the burst; all are cancelled below.
    const burst = await Promise.all(
      Array.from({ length: 50 }, () =>
        app.request('POST', '/v2/responses', {
          key: plain.key,
          body: { model: 'dev-echo', input: '/delay 60000 /words 2' },
        }),
      ),
    );
    expect(burst.every((reply) => reply.status === 200)).toBe(true);
    expect(
      (await app.request('POST', '/v2/responses', { key: plain.key, body: { model: 'dev-echo', input: 'hi' } })).status,
    ).toBe(429);
    // Nothing left running for the tests after this one.
    await Promise.all(
      burst.map((reply) => app.request('POST', `/v2/responses/${reply.body.id}/cancel`, { key: plain.key })),
    );
    for (const reply of burst) {
      await pollUntil(
        async () => (await app.request('GET', `/v2/responses/${reply.body.id}`, { key: plain.key })).body.status,
        (status) => ['cancelled', 'completed'].includes(status),
      );
    }
  });

  (postgresUrl ? it : it.skip)('replicas on one Postgres count the same requests', async () => {
    const replica = await TestApp.start({ schema: app.schema });
    try {
      const { key, accountId } = await app.createAccount();
      await setLimits(accountId, { requests_per_minute: 4 });
      await atStartOfMinute();
      for (const server of [app, replica, app, replica])
        expect((await server.request('GET', '/v2/organization/balance', { key })).status).toBe(200);
      expect((await replica.request('GET', '/v2/organization/balance', { key })).status).toBe(429);
      expect((await app.request('GET', '/v2/organization/balance', { key })).status).toBe(429);
    } finally {
      await replica.stop();
    }
  });
});
