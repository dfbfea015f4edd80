import { parseArguments, toRequest } from '../../src/admin/cli';
import { ADMIN_TOKEN, useTestApp } from '../support/harness';

/**
 * Operators without SQL (issue 34): debit and refund an account with a reason, idempotent by a key; re-enable a key;
 * suspend and reactivate an account (its keys answer 403 while suspended); its usage by day, model and service.
 */
describe('admin: operators without SQL', () => {
  const suite = useTestApp();
  const admin = (method: string, path: string, body?: unknown) =>
    suite.app.request(method, path, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(body === undefined ? {} : { body }),
    });
  /** An operator's debit or refund of `accountId`, with its reason and idempotency key. */
  const adjust = (
    accountId: string,
    type: 'debit' | 'refund',
    amount: number,
    reason: string,
    idempotencyKey: string,
  ) =>
    admin('POST', `/admin/accounts/${accountId}/adjustments`, {
      type,
      amount,
      reason,
      idempotency_key: idempotencyKey,
    });

  it('debits and refunds with a reason, idempotent by the key; a debit beyond what is available is refused whole', async () => {
    const { accountId, key } = await suite.app.createAccount({ balance: 1_000 });
    const debit = await adjust(accountId, 'debit', 300, 'manual correction #12', 'corr-12');
    expect(debit.status).toBe(201);
    expect(debit.body).toMatchObject({
      type: 'debit',
      amount: 300,
      metadata: { source: 'admin', reason: 'manual correction #12', idempotency_key: 'corr-12' },
    });
    const again = await adjust(accountId, 'debit', 300, 'manual correction #12', 'corr-12');
    expect([again.status, again.body.id, again.headers.get('idempotent-replayed')]).toEqual([
      201,
      debit.body.id,
      'true',
    ]);
    expect(debit.headers.get('idempotent-replayed')).toBeNull();
    const refund = await adjust(accountId, 'refund', 120, 'outage credit', 'refund-7');
    expect(refund.status).toBe(201);
    expect(refund.body).toMatchObject({
      type: 'credit',
      amount: 120,
      metadata: { source: 'admin', reason: 'outage credit' },
    });
    const twice = await Promise.all([1, 2].map(() => adjust(accountId, 'refund', 120, 'outage credit', 'refund-7')));
    expect(twice.map((reply) => reply.body.id)).toEqual([refund.body.id, refund.body.id]);
    const balance = await suite.app.request('GET', '/v2/organization/balance', { key });
    expect(balance.body.balance).toBe(1_000 - 300 + 120);

    const tooMuch = await adjust(accountId, 'debit', 5_000, 'too much', 'big');
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body).toEqual({
      error: { code: 'admin.invalid_request', message: expect.stringMatching(/has 820 kopecks available/) },
    });
    const missingReason = await admin('POST', `/admin/accounts/${accountId}/adjustments`, {
      type: 'refund',
      amount: 5,
      idempotency_key: 'x',
    });
    expect([missingReason.status, missingReason.body.error.code]).toEqual([400, 'admin.invalid_request']);
    expect((await suite.app.request('GET', '/v2/organization/balance', { key })).body.balance).toBe(820);
  });

  it('suspends an account (its keys answer 403) and reactivates it; re-enables a disabled key', async () => {
    const { accountId, key } = await suite.app.createAccount({ balance: 100 });
    expect((await suite.app.request('GET', '/v2/models', { key })).status).toBe(200);
    const suspended = await admin('POST', `/admin/accounts/${accountId}/suspend`);
    expect(suspended.status).toBe(200);
    expect(suspended.body.suspended_at).toEqual(expect.any(Number));
    const refused = await suite.app.request('GET', '/v2/models', { key });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      error: { code: 'auth.forbidden', message: expect.stringMatching(/account is suspended/) },
    });
    expect((await admin('GET', `/admin/accounts/${accountId}`)).body.suspended_at).toBe(suspended.body.suspended_at);
    const reactivated = await admin('POST', `/admin/accounts/${accountId}/reactivate`);
    expect(reactivated.body.suspended_at).toBeNull();
    expect((await suite.app.request('GET', '/v2/models', { key })).status).toBe(200);

    const keys = await admin('GET', `/admin/accounts/${accountId}/keys`);
    const keyId = keys.body.data[0].id;
    expect((await admin('POST', `/admin/keys/${keyId}/disable`)).body.status).toBe('disabled');
    expect((await suite.app.request('GET', '/v2/models', { key })).status).toBe(403);
    expect((await admin('POST', `/admin/keys/${keyId}/enable`)).body).toEqual({ id: keyId, status: 'active' });
    expect((await suite.app.request('GET', '/v2/models', { key })).status).toBe(200);
    expect((await admin('POST', '/admin/keys/key_missing/enable')).status).toBe(404);
  });

  it("an account's usage by day, model and service", async () => {
    const { accountId, key } = await suite.app.createAccount({ balance: 10_000 });
    await suite.app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: '/words 30', background: false },
    });
    await suite.app.request('POST', '/v2/embeddings', { key, body: { model: 'dev-embed', input: 'a few words' } });
    await adjust(accountId, 'debit', 7, 'fee', 'fee-1');
    const byService = await admin('GET', `/admin/accounts/${accountId}/usage?group_by=service`);
    expect(byService.status).toBe(200);
    expect(byService.body).toMatchObject({ object: 'organization.usage', group_by: 'service' });
    expect(byService.body.data.map((group: any) => group.key).sort()).toEqual(['embeddings', 'other', 'responses']);
    const byModel = await admin('GET', `/admin/accounts/${accountId}/usage?group_by=model`);
    expect(byModel.body.data.map((group: any) => group.key).sort()).toEqual(['dev-echo', 'dev-embed', 'none']);
    const byDay = await admin('GET', `/admin/accounts/${accountId}/usage`);
    expect(byDay.body.group_by).toBe('day');
    expect(byDay.body.total).toEqual(byService.body.total);
    expect(byDay.body.total.transactions).toBe(3);
    expect((await admin('GET', '/admin/accounts/acct_missing/usage')).status).toBe(404);
  });

  it('the CLI maps the new commands', () => {
    expect(
      toRequest(parseArguments(['account', 'debit', 'acct_1', '--amount', '300', '--reason', 'fix', '--key', 'k1'])),
    ).toEqual({
      method: 'POST',
      path: '/admin/accounts/acct_1/adjustments',
      body: { type: 'debit', amount: 300, reason: 'fix', idempotency_key: 'k1' },
    });
    expect(
      toRequest(parseArguments(['account', 'refund', 'acct_1', '--amount', '5', '--reason', 'sorry', '--key', 'k2']))
        .body,
    ).toMatchObject({ type: 'refund' });
    expect(() => toRequest(parseArguments(['account', 'refund', 'acct_1', '--amount', '5', '--key', 'k2']))).toThrow(
      /--reason is required/,
    );
    expect(toRequest(parseArguments(['account', 'suspend', 'acct_1']))).toEqual({
      method: 'POST',
      path: '/admin/accounts/acct_1/suspend',
    });
    expect(toRequest(parseArguments(['account', 'reactivate', 'acct_1']))).toEqual({
      method: 'POST',
      path: '/admin/accounts/acct_1/reactivate',
    });
    expect(toRequest(parseArguments(['key', 'enable', 'key_1']))).toEqual({
      method: 'POST',
      path: '/admin/keys/key_1/enable',
    });
    expect(toRequest(parseArguments(['account', 'usage', 'acct_1', '--group-by', 'model', '--from', '100']))).toEqual({
      method: 'GET',
      path: '/admin/accounts/acct_1/usage?group_by=model&from=100',
    });
  });
});
