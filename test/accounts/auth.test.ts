import { SignJWT, generateKeyPair } from 'jose';
import { SIGNING_SECRET, useTestApp, postgresUrl } from '../support/harness';

const backend = postgresUrl ? 'postgres' : 'pglite';
const ISSUER = 'switchyard';
const secret = new TextEncoder().encode(SIGNING_SECRET);
const now = () => Math.floor(Date.now() / 1000);
const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A token like the service issues (HS256, kid = key row, sub = account), with any part overridden. */
function sign(options: { kid?: string; sub: string; exp?: number; iss?: string; key?: Uint8Array; alg?: string }) {
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT', ...(options.kid ? { kid: options.kid } : {}) })
    .setSubject(options.sub)
    .setIssuer(options.iss ?? ISSUER)
    .setIssuedAt(now() - 3600);
  if (options.exp !== undefined) jwt.setExpirationTime(options.exp);
  return jwt.sign(options.key ?? secret);
}

describe(`authentication (${backend})`, () => {
  const suite = useTestApp();

  const listConversations = (token?: string, headers?: Record<string, string>) =>
    suite.app.request('GET', '/v2/conversations', { key: token, headers });

  /** 401 `auth.unauthorized` in the envelope, and the token never echoed back. */
  async function expectUnauthorized(token: string | undefined, message?: RegExp, headers?: Record<string, string>) {
    const reply = await listConversations(token, headers);
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual({ error: { code: 'auth.unauthorized', message: expect.any(String) } });
    if (message) expect(reply.body.error.message).toMatch(message);
    if (token) expectNoSecret(reply.body, token);
    return reply;
  }

  function expectNoSecret(body: unknown, token: string) {
    const text = JSON.stringify(body);
    expect(text).not.toContain(token);
    for (const part of token.split('.')) if (part.length >= 8) expect(text).not.toContain(part);
  }

  it('accepts the issued key and a token signed the same way (control for the cases below)', async () => {
    expect((await listConversations(suite.key)).status).toBe(200);
    const selfSigned = await sign({ kid: suite.keyId, sub: suite.accountId, exp: now() + 600 });
    expect((await listConversations(selfSigned)).status).toBe(200);
  });

  it('401 when the header is missing or empty, on v2 and v1', async () => {
    await expectUnauthorized(undefined, /X-Auth-Token/);
    await expectUnauthorized(undefined, undefined, { 'x-auth-token': '   ' });
    const v1 = await suite.app.request('GET', '/v1/models');
    expect([v1.status, v1.body.error.code]).toEqual([401, 'auth.unauthorized']);
    // An Authorization header that is not a Bearer key is no key at all.
    await expectUnauthorized(undefined, /X-Auth-Token/, {
      authorization: `Basic ${Buffer.from('a:b').toString('base64')}`,
    });
  });

  it('accepts the key as Authorization: Bearer (the OpenAI SDK); X-Auth-Token wins when both are sent', async () => {
    expect((await listConversations(undefined, { authorization: `Bearer ${suite.key}` })).status).toBe(200);
    expect((await listConversations(undefined, { authorization: `bearer   ${suite.key}` })).status).toBe(200);
    // X-Auth-Token is the one used: a valid one with a bad Bearer passes, a bad one with a valid Bearer does not.
    expect((await listConversations(suite.key, { authorization: 'Bearer not-a-jwt' })).status).toBe(200);
    await expectUnauthorized('not-a-jwt', undefined, { authorization: `Bearer ${suite.key}` });
    // Vendor keys stay refused in either header.
    const reply = await listConversations(undefined, {
      authorization: 'Bearer sk-proj-abcdefghijklmnopqrstuvwxyz0123456789',
    });
    expect([reply.status, reply.body.error.message]).toEqual([
      401,
      expect.stringMatching(/not valid for this version/),
    ]);
    const v1 = await suite.app.request('GET', '/v1/models', { headers: { authorization: `Bearer ${suite.key}` } });
    expect(v1.status).toBe(200);
  });

  it('401 for malformed keys', async () => {
    for (const token of [
      'not-a-jwt',
      'abc.def',
      'a.b.c.d',
      `Bearer ${suite.key}`,
      `${suite.key}x!`,
      'eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln',
    ]) {
      await expectUnauthorized(token);
    }
  });

  it('401 for an expired key: exp in the past, or the key row past its expiry', async () => {
    const created = await suite.app.admin('POST', `/admin/accounts/${suite.accountId}/keys`, { expires_in: 1 });
    expect(created.status).toBe(201);
    expect(created.body.expires_at).toEqual(expect.any(Number));
    const expired = await sign({ kid: created.body.id, sub: suite.accountId, exp: now() - 60 });
    await expectUnauthorized(expired, /expired/);

    // A token without exp is still refused when the row says the key expired. (The row is changed behind the
    // service's back, before the key's first use: a row read earlier may be reused for AUTH_CACHE_MS.)
    const other = await suite.app.admin('POST', `/admin/accounts/${suite.accountId}/keys`, {});
    await suite.app.db
      .updateTable('api_keys')
      .set({ expires_at: new Date(Date.now() - 60_000) })
      .where('id', '=', other.body.id)
      .execute();
    await expectUnauthorized(other.body.key, /expired/);
  });

  it('401 for a bad signature', async () => {
    const wrongSecret = await sign({
      kid: suite.keyId,
      sub: suite.accountId,
      key: new TextEncoder().encode('another-secret-that-is-long-enough-0123456789'),
    });
    await expectUnauthorized(wrongSecret, /signature/);
    const [header, payload, signature] = suite.key.split('.');
    const flipped = signature[0] === 'A' ? 'B' : 'A';
    await expectUnauthorized(`${header}.${payload}.${flipped}${signature.slice(1)}`);
    // The real signature over a different payload (another account).
    const forgedPayload = base64url({ sub: 'acct_someone_else', iss: ISSUER, iat: now() });
    await expectUnauthorized(`${header}.${forgedPayload}.${signature}`);
  });

  it("401 for 'alg: none' tokens", async () => {
    const header = base64url({ alg: 'none', typ: 'JWT', kid: suite.keyId });
    const payload = base64url({ sub: suite.accountId, iss: ISSUER, iat: now() });
    await expectUnauthorized(`${header}.${payload}.`);
    await expectUnauthorized(`${header}.${payload}.c2lnbmF0dXJl`);
    const lower = base64url({ alg: 'None', kid: suite.keyId });
    await expectUnauthorized(`${lower}.${payload}.c2lnbmF0dXJl`);
  });

  it('401 for tokens signed with another algorithm (RS256, ES256, HS512 with the right secret)', async () => {
    for (const alg of ['RS256', 'ES256'] as const) {
      const { privateKey } = await generateKeyPair(alg);
      const token = await new SignJWT({})
        .setProtectedHeader({ alg, kid: suite.keyId })
        .setSubject(suite.accountId)
        .setIssuer(ISSUER)
        .setIssuedAt()
        .sign(privateKey);
      await expectUnauthorized(token);
    }
    await expectUnauthorized(await sign({ kid: suite.keyId, sub: suite.accountId, alg: 'HS512' }), /algorithm/);
  });

  it('401 when the kid is unknown, missing, or names another account’s key; or the issuer is wrong', async () => {
    await expectUnauthorized(
      await sign({ kid: 'key_000000000000000000000000', sub: suite.accountId }),
      /not recognised/,
    );
    await expectUnauthorized(await sign({ sub: suite.accountId }));
    const stranger = await suite.app.createAccount();
    await expectUnauthorized(await sign({ kid: stranger.keyId, sub: suite.accountId }));
    await expectUnauthorized(await sign({ kid: suite.keyId, sub: suite.accountId, iss: 'someone-else' }));
  });

  it('401 for vendor-style sk-... keys, saying the format is not valid for this version', async () => {
    for (const token of ['sk-proj-abcdefghijklmnopqrstuvwxyz0123456789', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz']) {
      await expectUnauthorized(token, /not valid for this version/);
    }
  });

  it('403 auth.forbidden for a disabled key; the account’s other keys keep working', async () => {
    const doomed = await suite.app.admin('POST', `/admin/accounts/${suite.accountId}/keys`, { name: 'doomed' });
    expect((await listConversations(doomed.body.key)).status).toBe(200);
    const disabled = await suite.app.admin('POST', `/admin/keys/${doomed.body.id}/disable`);
    expect(disabled.body).toEqual({ id: doomed.body.id, status: 'disabled' });
    for (const [method, url] of [
      ['GET', '/v2/conversations'],
      ['POST', '/v2/conversations'],
      ['GET', '/v2/assistants'],
    ]) {
      const reply = await suite.app.request(method, url, {
        key: doomed.body.key,
        body: method === 'POST' ? {} : undefined,
      });
      expect([url, reply.status, reply.body]).toEqual([
        url,
        403,
        { error: { code: 'auth.forbidden', message: expect.any(String) } },
      ]);
      expectNoSecret(reply.body, doomed.body.key);
    }
    // Disabling wrote nothing else: no conversation was created by the refused POST.
    const rows = await suite.app.db
      .selectFrom('conversations')
      .select('id')
      .where('account_id', '=', suite.accountId)
      .execute();
    expect(rows).toEqual([]);
    expect((await listConversations(suite.key)).status).toBe(200);
  });

  it("404 for another account's conversation, with a valid key", async () => {
    const owner = await suite.app.createAccount();
    const created = await suite.app.request('POST', '/v2/conversations', {
      key: owner.key,
      body: { metadata: { private: 'yes' } },
    });
    const reply = await suite.app.request('GET', `/v2/conversations/${created.body.id}`, { key: suite.key });
    expect([reply.status, reply.body.error.code]).toEqual([404, 'conversation.not_found']);
    expectNoSecret(reply.body, suite.key);
    expect((await suite.app.request('GET', `/v2/conversations/${created.body.id}`, { key: owner.key })).status).toBe(
      200,
    );
  });
});
