import { TestApp } from '../support/harness';

/**
 * A 402 says how much must be available for the request and how much is (issue 34, defect 4): an account with a
 * balance of 2 asking "hi" used to hear "The account balance is exhausted" while /balance showed 2.
 */
describe('billing: a 402 that says what the request needs and what is available', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
  });
  afterAll(() => app.close());

  const needs = (message: string) => Number(/needs (\d+) kopecks available/.exec(message)?.[1]);

  it('a Response whose hold does not fit a balance of 2: the amount it needs and the 2 available, in the spec envelope', async () => {
    const { key } = await app.createAccount({ balance: 2 });
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: 'hi', background: false },
    });
    expect(reply.status).toBe(402);
    expect(Object.keys(reply.body)).toEqual(['error']);
    expect(reply.body.error.code).toBe('organization.payment_required');
    expect(reply.body.error.message).toMatch(
      /^This request needs \d+ kopecks available \(its input and at least one output token\); the account has 2 available \(balance 2\)\. Top up the balance to continue\.$/,
    );
    expect(needs(reply.body.error.message)).toBeGreaterThan(2);
    const balance = await app.request('GET', '/v2/organization/balance', { key });
    expect(balance.body).toEqual({ balance: 2, available: 2 });
  });

  it('a balance held by operations in flight: the message says how much of it is held', async () => {
    const { key, accountId } = await app.createAccount({ balance: 100 });
    await app.runtime.deps.ledger.hold({ accountId, operationKey: 'test:in-flight', amount: 99 });
    const reply = await app.request('POST', '/v2/chat/completions', {
      key,
      body: { model: 'dev-echo', messages: [{ role: 'user', content: 'hello' }], max_tokens: 50 },
    });
    expect(reply.status).toBe(402);
    expect(reply.body.error.code).toBe('organization.payment_required');
    // A fixed cap is held whole: what it needs is the most the call can cost.
    expect(reply.body.error.message).toMatch(
      /^This request needs \d+ kopecks available \(the most it can cost\); the account has 1 available \(balance 100, of which 99 held by operations in flight\)\./,
    );
    expect(needs(reply.body.error.message)).toBeGreaterThanOrEqual(10);
    await app.runtime.deps.ledger.release(accountId, 'test:in-flight');
  });

  it('with an Idempotency-Key (the hold in a transaction) and for embeddings, the same figures', async () => {
    const { key } = await app.createAccount({ balance: 1 });
    const keyed = await app.request('POST', '/v2/responses', {
      key,
      headers: { 'Idempotency-Key': 'pay-1' },
      body: { model: 'dev-echo', input: 'hi there', max_output_tokens: 100 },
    });
    expect(keyed.status).toBe(402);
    expect(keyed.body.error.message).toMatch(
      /needs \d+ kopecks available \(the most it can cost\); the account has 1 available \(balance 1\)/,
    );
    const embedded = await app.request('POST', '/v2/embeddings', {
      key,
      body: { model: 'dev-embed', input: 'x '.repeat(2000) },
    });
    expect(embedded.status).toBe(402);
    expect(embedded.body.error.message).toMatch(
      /needs \d+ kopecks available \(the most it can cost\); the account has 1 available \(balance 1\)/,
    );
  });
});
