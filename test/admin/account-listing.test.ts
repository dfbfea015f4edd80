import { useTestApp } from '../support/harness';

/** Operators find accounts and keys without reading the database: GET /admin/accounts, one account with its keys. */
describe('admin: listing accounts and keys', () => {
  const suite = useTestApp();
  const admin = async (method: string, path: string) => (await suite.app.admin(method, path)).body;

  it('lists accounts newest first, filtered by part of the name (case-insensitive, % and _ literal), paged', async () => {
    const names = ['Acme Robotics', 'acme labs', 'Globex', '100%_real'];
    const ids: string[] = [];
    for (const name of names) ids.push((await suite.app.createAccount({ name, balance: 5 })).accountId);
    const acme = await admin('GET', '/admin/accounts?name=ACME');
    expect(acme.data.map((row: any) => row.name)).toEqual(['acme labs', 'Acme Robotics']);
    expect(acme.data[0]).toMatchObject({ id: ids[1], balance: 5, available: 5, mcp_enabled: false });
    expect((await admin('GET', '/admin/accounts?name=%25_')).data.map((row: any) => row.name)).toEqual(['100%_real']);

    const first = await admin('GET', '/admin/accounts?limit=2');
    expect(first).toMatchObject({ object: 'list', has_more: true });
    expect(first.data.map((row: any) => row.id)).toEqual([ids[3], ids[2]]);
    const second = await admin('GET', `/admin/accounts?limit=2&after=${first.last_id}`);
    expect(second.data.map((row: any) => row.id)).toEqual([ids[1], ids[0]]);
  });

  it('one account shows its keys with status and last use; the key text never appears', async () => {
    const account = await suite.app.createAccount({ name: 'keys' });
    const before = await admin('GET', `/admin/accounts/${account.accountId}`);
    expect(before.keys).toEqual([expect.objectContaining({ id: account.keyId, status: 'active', last_used_at: null })]);
    expect((await suite.app.request('GET', '/v2/organization/balance', { key: account.key })).status).toBe(200);
    // The last use is written beside the request, not before its answer (accounts.service.ts, noteKeyUse): read
    // until it is there (on a loaded machine it once was not, right after the answer).
    const deadline = Date.now() + 10_000;
    let after = await admin('GET', `/admin/accounts/${account.accountId}/keys`);
    while (after.data[0].last_used_at === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await admin('GET', `/admin/accounts/${account.accountId}/keys`);
    }
    const used = after.data[0];
    expect(used.last_used_at).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 60);
    expect(JSON.stringify(after)).not.toContain(account.key);
  });

  it('bad queries are 400s in the envelope; an unknown account is a 404', async () => {
    for (const query of ['limit=0', 'limit=x', 'after=acct_nope', 'sort=name']) {
      const reply = await suite.app.admin('GET', `/admin/accounts?${query}`);
      expect([query, reply.status, reply.body.error?.code]).toEqual([query, 400, 'admin.invalid_request']);
    }
    expect((await suite.app.admin('GET', '/admin/accounts/acct_nope/keys')).status).toBe(404);
  });
});
