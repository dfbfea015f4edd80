import net from 'node:net';
import { TestApp, ADMIN_TOKEN } from '../support/harness';

describe('foundation: health, errors, admin, auth', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
  });
  afterAll(() => app.close());

  it('answers health and readiness', async () => {
    expect((await app.request('GET', '/healthz')).body).toEqual({ status: 'ok' });
    expect((await app.request('GET', '/readyz')).body).toEqual({ status: 'ready' });
  });

  it('gives unknown routes a 404 in the envelope', async () => {
    const { key } = await app.createAccount();
    const reply = await app.request('GET', '/v2/nothing-here', { key });
    expect(reply.status).toBe(404);
    expect(reply.body).toEqual({ error: { code: 'request.not_found', message: expect.any(String) } });
    expect(reply.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('refuses admin routes without the admin token, and API keys there', async () => {
    const { key } = await app.createAccount();
    expect((await app.request('POST', '/admin/accounts', { body: { name: 'x' } })).status).toBe(401);
    const withKey = await app.request('POST', '/admin/accounts', { body: { name: 'x' }, key });
    expect(withKey.status).toBe(401);
    expect(withKey.body.error.message).toMatch(/do not accept API keys/);
    const wrong = await app.request('GET', '/admin/accounts/acct_x', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
  });

  it('creates accounts with a credited balance and manages keys', async () => {
    const created = await app.admin('POST', '/admin/accounts', { name: 'acme', balance: 500, mcp_enabled: true });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^acct_/),
      name: 'acme',
      balance: 500,
      available: 500,
      mcp_enabled: true,
      suspended_at: null,
      limits: { requests_per_minute: null, tokens_per_minute: null, concurrent_jobs: null },
      created_at: expect.any(Number),
    });
    const id = created.body.id;
    expect((await app.admin('GET', `/admin/accounts/${id}`)).body.balance).toBe(500);
    const credit = await app.admin('POST', `/admin/accounts/${id}/credits`, { amount: 250, note: 'top-up' });
    expect(credit.status).toBe(201);
    expect(credit.body).toMatchObject({ type: 'credit', amount: 250, currency: 'RUB' });
    expect((await app.admin('GET', `/admin/accounts/${id}`)).body.balance).toBe(750);
    const patched = await app.admin('PATCH', `/admin/accounts/${id}`, { name: 'acme 2', mcp_enabled: false });
    expect(patched.body).toMatchObject({ name: 'acme 2', mcp_enabled: false });
    const transactions = await app.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('account_id', '=', id)
      .execute();
    expect(transactions.map((t) => [t.type, t.amount]).sort()).toEqual([
      ['credit', 250],
      ['credit', 500],
    ]);
  });

  it('validates admin bodies and leaves nothing half-written', async () => {
    const before = await app.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    for (const body of [
      {},
      { name: '' },
      { name: 'x', balance: -1 },
      { name: 'x', balance: 1.5 },
      { name: 'x', extra: true },
      { name: 7 },
    ]) {
      const reply = await app.admin('POST', '/admin/accounts', body);
      expect(reply.status).toBe(400);
      expect(reply.body.error.code).toBe('admin.invalid_request');
    }
    const after = await app.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    expect((await app.admin('GET', '/admin/accounts/acct_missing')).status).toBe(404);
    expect((await app.admin('POST', '/admin/accounts/acct_missing/credits', { amount: 5 })).status).toBe(404);
    expect((await app.admin('POST', '/admin/accounts/acct_missing/keys', {})).status).toBe(404);
    expect((await app.admin('POST', '/admin/keys/key_missing/disable')).status).toBe(404);
  });

  it('rejects malformed JSON and oversized bodies with the envelope', async () => {
    const bad = await app.request('POST', '/admin/accounts', {
      rawBody: '{"name":',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('request.invalid_json');
    const huge = await app.request('POST', '/admin/accounts', {
      rawBody: JSON.stringify({ name: 'x'.repeat(11 * 1024 * 1024) }),
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('request.too_large');
  });

  it('answers headers too large and malformed requests with the envelope, not a bare status line', async () => {
    const huge = await fetch(`${app.baseUrl}/v2/models`, { headers: { 'x-auth-token': 'k'.repeat(1024 * 1024) } });
    expect(huge.status).toBe(431);
    expect(huge.headers.get('content-type')).toContain('application/json');
    expect(await huge.json()).toEqual({ error: { code: 'request.headers_too_large', message: expect.any(String) } });
    const { port } = new URL(app.baseUrl);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.write('NOT A REQUEST\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'request.invalid_request', message: expect.any(String) },
    });
  });

  it('answers a JSON route with 415 when the body does not say it is JSON, and writes nothing', async () => {
    const accounts = async () =>
      (await app.db.selectFrom('accounts').select('id').where('name', '=', 'untyped').execute()).length;
    const body = JSON.stringify({ name: 'untyped' });
    const sent: Array<Record<string, string>> = [
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      {}, // fetch sends a Uint8Array with no content type at all
    ];
    for (const headers of sent) {
      const reply = await fetch(`${app.baseUrl}/admin/accounts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers },
        body: new TextEncoder().encode(body),
      });
      expect(reply.status).toBe(415);
      expect(((await reply.json()) as { error: { code: string } }).error.code).toBe('request.unsupported_media_type');
    }
    expect(await accounts()).toBe(0);
    const typed = await app.request('POST', '/admin/accounts', {
      rawBody: body,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json; charset=utf-8' },
    });
    expect(typed.status).toBe(201);
    expect(await accounts()).toBe(1);
  });
});
