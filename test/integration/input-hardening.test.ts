import { TestApp } from '../support/harness';

/** Bad input that used to reach the database and come back as a 500 instead of a 400 in the envelope. */
describe('input hardening: NUL characters never reach a query', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
  });
  afterAll(() => app.close());

  const refused = { error: { code: 'request.invalid_request', message: expect.stringMatching(/NUL/) } };

  it('refuses %00 in path ids and query cursors with a 400, public and admin routes alike', async () => {
    const { key } = await app.createAccount({ balance: 100 });
    const conversation = await app.request('POST', '/v2/conversations', { key, body: {} });
    for (const [method, path] of [
      ['GET', '/v2/conversations/conv_%00'],
      ['DELETE', '/v2/conversations/%00'],
      ['GET', `/v2/conversations/${conversation.body.id}/items/msg_%00`],
      ['GET', `/v2/conversations/${conversation.body.id}/items?after=%00`],
      ['GET', '/v2/conversations?before=x%00y'],
      ['GET', '/v2/organization/transactions?limit=5&after_id=txn_%00'],
      ['GET', '/v2/responses/resp_%00'],
    ]) {
      const reply = await app.request(method, path, { key });
      expect({ path, status: reply.status, body: reply.body }).toEqual({ path, status: 400, body: refused });
    }
    const admin = await app.admin('GET', '/admin/accounts/acct_%00');
    expect(admin.status).toBe(400);
    expect(admin.body).toEqual(refused);
  });

  it('refuses NUL in admin names and notes with a 400 and writes nothing', async () => {
    const before = await app.db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const account = await app.admin('POST', '/admin/accounts', { name: 'a\u0000b', balance: 10 });
    expect(account.status).toBe(400);
    expect(account.body.error.code).toBe('admin.invalid_request');
    const after = await app.db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));

    const { accountId } = await app.createAccount({ balance: 100 });
    const credit = await app.admin('POST', `/admin/accounts/${accountId}/credits`, { amount: 5, note: 'x\u0000' });
    expect(credit.status).toBe(400);
    expect(credit.body.error.code).toBe('admin.invalid_request');
    expect((await app.admin('GET', `/admin/accounts/${accountId}`)).body.balance).toBe(100);
    expect((await app.admin('PATCH', `/admin/accounts/${accountId}`, { name: '\u0000' })).status).toBe(400);
    expect((await app.admin('POST', `/admin/accounts/${accountId}/keys`, { name: 'k\u0000' })).status).toBe(400);
  });

  it('stores the six characters backslash-u0000 in an Assistant, and still refuses a real NUL', async () => {
    const { key } = await app.createAccount({ balance: 100 });
    const text = 'escape NUL as \\u0000 in JSON';
    const created = await app.request('POST', '/v2/assistants', {
      key,
      body: { model: 'dev-echo', name: 'escapes', instructions: text, tool_resources: { note: text }, metadata: { hint: text } },
    });
    expect(created.status).toBe(200);
    const read = await app.request('GET', `/v2/assistants/${created.body.id}`, { key });
    expect(read.body).toMatchObject({ instructions: text, tool_resources: { note: text }, metadata: { hint: text } });

    const refusedNul = await app.request('POST', '/v2/assistants', {
      key,
      body: { model: 'dev-echo', name: 'nul', tool_resources: { deep: [{ 'k\u0000': 1 }] } },
    });
    expect(refusedNul.status).toBe(400);
    expect(refusedNul.body.error.code).toBe('assistant.invalid_request');
  });
});
