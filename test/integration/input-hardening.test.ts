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
});
