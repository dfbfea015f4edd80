import { Writable } from 'node:stream';
import pino from 'pino';
import { ADMIN_TOKEN, TestApp } from '../support/harness';

/** The account's own keys (GET/POST /v2/organization/keys, POST .../disable) and operator sign-in with the admin token. */
describe('organization: keys', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
  });
  afterAll(() => app.close());

  it('lists the keys newest first, marking the one the request is made with', async () => {
    const { key, keyId } = await app.createAccount();
    const created = await app.request('POST', '/v2/organization/keys', { key, body: { name: 'console' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^key_/),
      object: 'api_key',
      name: 'console',
      status: 'active',
      created_at: expect.any(Number),
      expires_at: null,
      last_used_at: null,
      disabled_at: null,
      current: false,
      key: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
    });

    const listed = await app.request('GET', '/v2/organization/keys', { key });
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ object: 'list', has_more: false, first_id: created.body.id, last_id: keyId });
    expect(listed.body.data.map((entry: any) => [entry.id, entry.current])).toEqual([
      [created.body.id, false],
      [keyId, true],
    ]);
    // Never the key text.
    expect(listed.body.data.every((entry: any) => !('key' in entry))).toBe(true);

    // The new key works, and is the current one when used.
    const withNew = await app.request('GET', '/v2/organization/keys', { key: created.body.key });
    expect(withNew.body.data.map((entry: any) => [entry.id, entry.current])).toEqual([
      [created.body.id, true],
      [keyId, false],
    ]);
  });

  it('validates the body of a new key', async () => {
    const { key } = await app.createAccount();
    const before = Math.floor(Date.now() / 1000);
    const expiring = await app.request('POST', '/v2/organization/keys', { key, body: { expires_in_seconds: 3600 } });
    expect(expiring.status).toBe(201);
    expect(expiring.body.name).toBeNull();
    expect(expiring.body.expires_at).toBeGreaterThanOrEqual(before + 3600);
    expect(expiring.body.expires_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600);
    // No body at all is a key without a name.
    expect((await app.request('POST', '/v2/organization/keys', { key })).status).toBe(201);

    const refused: Array<[unknown, RegExp]> = [
      [{ name: '' }, /name/],
      [{ name: 'x'.repeat(101) }, /name/],
      [{ expires_in_seconds: 59 }, /expires_in_seconds/],
      [{ expires_in_seconds: 10 * 365 * 24 * 3600 + 1 }, /expires_in_seconds/],
      [{ expires_in_seconds: 90.5 }, /expires_in_seconds/],
      [{ expires_in: 3600 }, /expires_in/],
    ];
    for (const [body, message] of refused) {
      const reply = await app.request('POST', '/v2/organization/keys', { key, body });
      expect([body, reply.status, reply.body.error.code]).toEqual([body, 400, 'organization.invalid_request']);
      expect(reply.body.error.message).toMatch(message);
    }
  });

  it('disables a key (idempotently), after which the API refuses it', async () => {
    const { key } = await app.createAccount();
    const second = (await app.request('POST', '/v2/organization/keys', { key, body: { name: 'to disable' } })).body;
    expect((await app.request('GET', '/v2/organization/balance', { key: second.key })).status).toBe(200);

    const disabled = await app.request('POST', `/v2/organization/keys/${second.id}/disable`, { key });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({
      id: second.id,
      object: 'api_key',
      status: 'disabled',
      current: false,
      disabled_at: expect.any(Number),
    });
    const again = await app.request('POST', `/v2/organization/keys/${second.id}/disable`, { key, body: {} });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(disabled.body);

    const refused = await app.request('GET', '/v2/organization/balance', { key: second.key });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('auth.forbidden');
    const listed = await app.request('GET', '/v2/organization/keys', { key });
    expect(listed.body.data.find((entry: any) => entry.id === second.id)).toMatchObject({ status: 'disabled' });
  });

  it('refuses to disable the key the request uses unless confirm_self is true', async () => {
    const { key, keyId } = await app.createAccount();
    for (const body of [undefined, {}, { confirm_self: false }]) {
      const refused = await app.request('POST', `/v2/organization/keys/${keyId}/disable`, { key, body });
      expect([body, refused.status]).toEqual([body, 400]);
      expect(refused.body.error.code).toBe('organization.self_disable');
      expect(refused.body.error.message).toMatch(/confirm_self/);
    }
    expect((await app.request('GET', '/v2/organization/balance', { key })).status).toBe(200);

    const badBody = await app.request('POST', `/v2/organization/keys/${keyId}/disable`, {
      key,
      body: { confirm: true },
    });
    expect(badBody.status).toBe(400);
    expect(badBody.body.error.code).toBe('organization.invalid_request');

    const confirmed = await app.request('POST', `/v2/organization/keys/${keyId}/disable`, {
      key,
      body: { confirm_self: true },
    });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ id: keyId, status: 'disabled', current: true });
    const after = await app.request('GET', '/v2/organization/balance', { key });
    expect(after.status).toBe(403);
  });

  it("does not tell another account's key from an unknown one", async () => {
    const mine = await app.createAccount();
    const theirs = await app.createAccount();
    const foreign = await app.request('POST', `/v2/organization/keys/${theirs.keyId}/disable`, { key: mine.key });
    const unknown = await app.request('POST', '/v2/organization/keys/key_unknown/disable', { key: mine.key });
    expect([foreign.status, unknown.status]).toEqual([404, 404]);
    expect(foreign.body.error).toEqual({
      code: 'organization.not_found',
      message: `No API key with id ${theirs.keyId}.`,
    });
    expect(unknown.body.error).toEqual({ code: 'organization.not_found', message: 'No API key with id key_unknown.' });
    // Their key still works and is not listed among mine.
    expect((await app.request('GET', '/v2/organization/balance', { key: theirs.key })).status).toBe(200);
    const listed = await app.request('GET', '/v2/organization/keys', { key: mine.key });
    expect(listed.body.data.map((entry: any) => entry.id)).toEqual([mine.keyId]);
  });

  it('requires an API key', async () => {
    expect((await app.request('GET', '/v2/organization/keys')).status).toBe(401);
    expect((await app.request('POST', '/v2/organization/keys', { body: {} })).status).toBe(401);
    expect((await app.request('POST', '/v2/organization/keys/key_x/disable')).status).toBe(401);
  });
});

describe('operator sign-in: the admin token with X-Switchyard-Account', () => {
  let app: TestApp;
  /** Everything the app logs, at debug: the admin token must appear in none of it. */
  const logged: string[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logged.push(String(chunk));
        done();
      },
    });
    app = await TestApp.start({ logger: pino({ level: 'debug' }, sink) });
  });
  afterAll(() => app.close());

  const asOperator = (accountId: string, token = ADMIN_TOKEN) => ({
    authorization: `Bearer ${token}`,
    'x-switchyard-account': accountId,
  });

  it('acts as the account, with no key of its own', async () => {
    const customer = await app.createAccount({ balance: 4_321 });
    const other = await app.createAccount({ balance: 99 });
    const balance = await app.request('GET', '/v2/organization/balance', { headers: asOperator(customer.accountId) });
    expect(balance.status).toBe(200);
    expect(balance.body).toEqual({ balance: 4_321, available: 4_321 });
    expect(
      (await app.request('GET', '/v2/organization/balance', { headers: asOperator(other.accountId) })).body.balance,
    ).toBe(99);

    // No key is the current one; a key created or disabled for the customer is theirs.
    const created = await app.request('POST', '/v2/organization/keys', {
      headers: asOperator(customer.accountId),
      body: { name: 'by operator' },
    });
    expect(created.status).toBe(201);
    expect(created.body.current).toBe(false);
    const keys = await app.request('GET', '/v2/organization/keys', { headers: asOperator(customer.accountId) });
    expect(keys.body.data.map((entry: any) => [entry.id, entry.current])).toEqual([
      [created.body.id, false],
      [customer.keyId, false],
    ]);
    // Any of the account's keys can be disabled without confirm_self: the operator uses none of them.
    const disabled = await app.request('POST', `/v2/organization/keys/${customer.keyId}/disable`, {
      headers: asOperator(customer.accountId),
    });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ status: 'disabled', current: false });
    expect((await app.request('GET', '/v2/organization/balance', { key: created.body.key })).status).toBe(200);

    // Billed work is the account's.
    const response = await app.request('POST', '/v2/responses', {
      headers: asOperator(customer.accountId),
      body: { model: 'dev-echo', input: 'for the customer', background: false },
    });
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('completed');
    const after = await app.request('GET', '/v2/organization/balance', { key: created.body.key });
    expect(after.body.balance).toBe(4_321 - Math.ceil(response.body.usage.cost));
    expect((await app.request('GET', `/v2/responses/${response.body.id}`, { key: created.body.key })).status).toBe(200);
    expect((await app.request('GET', `/v2/responses/${response.body.id}`, { key: other.key })).status).toBe(404);

    // Every public prefix.
    expect((await app.request('GET', '/openai/v1/models', { headers: asOperator(customer.accountId) })).status).toBe(
      200,
    );
    expect((await app.request('GET', '/v1/models', { headers: asOperator(customer.accountId) })).status).toBe(200);
    // getMe names the account; there is no key to show.
    const me = await app.request('GET', '/v1/getMe', { headers: asOperator(customer.accountId) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ account: { id: customer.accountId }, key: null });
  });

  it('refuses a wrong token, the admin token alone, and an unknown account', async () => {
    const customer = await app.createAccount();
    const wrong = await app.request('GET', '/v2/organization/balance', {
      headers: asOperator(customer.accountId, `${ADMIN_TOKEN}x`),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('auth.unauthorized');

    const alone = await app.request('GET', '/v2/organization/balance', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(alone.status).toBe(401);
    expect(alone.body.error.code).toBe('auth.unauthorized');
    expect(alone.body.error.message).toMatch(/X-Switchyard-Account/);
    expect(alone.body.error.message).not.toContain(ADMIN_TOKEN);

    const unknown = await app.request('GET', '/v2/organization/balance', { headers: asOperator('acct_unknown') });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toEqual({ code: 'auth.not_found', message: expect.stringMatching(/acct_unknown/) });

    // The admin token is accepted as a Bearer only, not as an API key in X-Auth-Token.
    const asKey = await app.request('GET', '/v2/organization/balance', {
      headers: { 'x-auth-token': ADMIN_TOKEN, 'x-switchyard-account': customer.accountId },
    });
    expect(asKey.status).toBe(401);
  });

  it('does not let X-Switchyard-Account change the account of an API key', async () => {
    const customer = await app.createAccount({ balance: 10 });
    const other = await app.createAccount({ balance: 20 });
    const header = { 'x-switchyard-account': other.accountId };
    const refused = await app.request('GET', '/v2/organization/balance', { key: customer.key, headers: header });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('auth.forbidden');
    expect(refused.body.error.message).toMatch(/X-Switchyard-Account/);
    // X-Auth-Token wins over Authorization, so an admin Bearer beside a key does not turn the key into an operator.
    const beside = await app.request('GET', '/v2/organization/balance', {
      key: customer.key,
      headers: { ...header, authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(beside.status).toBe(403);
    // Naming the key's own account changes nothing.
    const own = await app.request('GET', '/v2/organization/balance', {
      key: customer.key,
      headers: { 'x-switchyard-account': customer.accountId },
    });
    expect(own.body).toEqual({ balance: 10, available: 10 });
    // Without any token the header is no credential.
    expect((await app.request('GET', '/v2/organization/balance', { headers: header })).status).toBe(401);
  });

  it('never logs the admin token', async () => {
    const customer = await app.createAccount();
    await app.request('GET', '/v2/organization/keys', { headers: asOperator(customer.accountId) });
    await app.request('GET', '/v2/organization/keys', { headers: asOperator('acct_unknown') });
    await app.request('GET', '/v2/organization/keys', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    await app.request('GET', '/openai/v1/models', { headers: asOperator('acct_unknown') });
    const text = logged.join('');
    expect(text).toContain('"status":404');
    expect(text).not.toContain(ADMIN_TOKEN);
  });
});
