import { TestApp } from '../support/harness';

/** Σcredits − Σdebits straight from the ledger rows of one account. */
async function ledgerSum(app: TestApp, accountId: string) {
  const rows = await app.db
    .selectFrom('ledger_transactions')
    .select(['type', 'amount', 'operation_key'])
    .where('account_id', '=', accountId)
    .execute();
  const total = rows.reduce((sum, row) => sum + (row.type === 'credit' ? row.amount : -row.amount), 0);
  return { rows, total };
}

describe('organization: balance and transactions', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
  });
  afterAll(() => app.close());

  it('reports the balance in kopecks', async () => {
    const { key, accountId } = await app.createAccount({ balance: 12_345 });
    const reply = await app.request('GET', '/v2/organization/balance', { key });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ balance: 12_345, available: 12_345 });
    await app.runtime.deps.ledger.debit({
      accountId,
      cost: '345',
      operationKey: 'test:one',
      metadata: { source: 'test' },
    });
    expect((await app.request('GET', '/v2/organization/balance', { key })).body).toEqual({
      balance: 12_000,
      available: 12_000,
    });
  });

  it('requires an API key', async () => {
    expect((await app.request('GET', '/v2/organization/balance')).status).toBe(401);
    expect((await app.request('GET', '/v2/organization/transactions?limit=5')).status).toBe(401);
  });

  it('lists transactions newest first in the spec shape and pages with after_id', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1000 });
    const { ledger } = app.runtime.deps;
    for (let index = 1; index <= 4; index++) {
      await ledger.credit({ accountId, amount: index * 10, metadata: { source: 'admin', note: `credit ${index}` } });
    }
    await ledger.debit({
      accountId,
      cost: '7',
      operationKey: 'test:debit-1',
      metadata: { source: 'api', vendor: 'dev', model: 'dev-echo', service: 'chat', request_id: 'req_1' },
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });

    const all = await app.request('GET', '/v2/organization/transactions?limit=200', { key });
    expect(all.status).toBe(200);
    expect(all.body.transactions.map((t: any) => [t.type, t.amount])).toEqual([
      ['debit', 7],
      ['credit', 40],
      ['credit', 30],
      ['credit', 20],
      ['credit', 10],
      ['credit', 1000],
    ]);
    expect(all.body.transactions[0]).toEqual({
      id: expect.stringMatching(/^txn_/),
      type: 'debit',
      amount: 7,
      currency: 'RUB',
      metadata: {
        source: 'api',
        vendor: 'dev',
        model: 'dev-echo',
        service: 'chat',
        request_id: 'req_1',
        cost: 7,
        carry: 0,
      },
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
      created_at: expect.any(String),
    });
    // ISO 8601 with an offset.
    expect(all.body.transactions[0].created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);

    const pages: string[][] = [];
    let after: string | undefined;
    for (;;) {
      const page = await app.request(
        'GET',
        `/v2/organization/transactions?limit=2${after ? `&after_id=${after}` : ''}`,
        { key },
      );
      expect(page.status).toBe(200);
      if (page.body.transactions.length === 0) break;
      pages.push(page.body.transactions.map((t: any) => t.id));
      after = page.body.transactions.at(-1).id;
    }
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2]);
    expect(pages.flat()).toEqual(all.body.transactions.map((t: any) => t.id));
  });

  it('validates limit and after_id', async () => {
    const { key } = await app.createAccount({ balance: 100 });
    const other = await app.createAccount({ balance: 100 });
    const foreign = await app.request('GET', '/v2/organization/transactions?limit=1', { key: other.key });
    const foreignId = foreign.body.transactions[0].id;
    const cases: Array<[string, RegExp]> = [
      ['', /limit is required/],
      ['?limit=0', /limit/],
      ['?limit=201', /limit/],
      ['?limit=abc', /limit/],
      ['?limit=1.5', /limit/],
      ['?limit=5&limit=6', /limit/],
      ['?limit=5&after_id=txn_unknown', /after_id/],
      [`?limit=5&after_id=${foreignId}`, /after_id/],
    ];
    for (const [query, message] of cases) {
      const reply = await app.request('GET', `/v2/organization/transactions${query}`, { key });
      expect([query, reply.status]).toEqual([query, 400]);
      expect(reply.body.error.code).toBe('organization.invalid_request');
      expect(reply.body.error.message).toMatch(message);
    }
    expect((await app.request('GET', '/v2/organization/transactions?limit=200', { key })).status).toBe(200);
    expect((await app.request('GET', '/v2/organization/transactions?limit=1', { key })).body.transactions).toHaveLength(
      1,
    );
  });

  it('keeps balance = credits − debits under concurrent debits, charging a duplicated operation once', async () => {
    const { key, accountId } = await app.createAccount({ balance: 100_000 });
    const { ledger } = app.runtime.deps;
    const distinct = Array.from({ length: 40 }, (_, index) =>
      ledger.debit({
        accountId,
        cost: String(3 + (index % 5)),
        operationKey: `burst:${index}`,
        metadata: { source: 'test' },
      }),
    );
    // 5 operations, each debited 8 times at once: every caller gets the same row back, the balance moves once.
    const duplicated = Array.from({ length: 40 }, (_, index) =>
      ledger.debit({ accountId, cost: '11', operationKey: `dup:${index % 5}`, metadata: { source: 'test' } }),
    );
    const credits = Array.from({ length: 10 }, () =>
      ledger.credit({ accountId, amount: 9, metadata: { source: 'admin' } }),
    );
    const results = await Promise.all([...distinct, ...duplicated, ...credits]);

    const duplicateRows = results.slice(40, 80);
    for (let index = 0; index < 5; index++) {
      const ids = new Set(duplicateRows.filter((_, i) => i % 5 === index).map((row) => row!.id));
      expect(ids.size).toBe(1);
    }
    const { rows, total } = await ledgerSum(app, accountId);
    expect(rows.filter((row) => row.operation_key?.startsWith('dup:'))).toHaveLength(5);
    expect(rows.filter((row) => row.operation_key?.startsWith('burst:'))).toHaveLength(40);
    const expectedDebits =
      Array.from({ length: 40 }, (_, index) => 3 + (index % 5)).reduce((a, b) => a + b, 0) + 5 * 11;
    expect(total).toBe(100_000 + 90 - expectedDebits);
    const balance = await app.request('GET', '/v2/organization/balance', { key });
    expect(balance.body.balance).toBe(total);
  });

  it('group-commits concurrent debits of several accounts, and a debit that cannot be written fails alone', async () => {
    const first = await app.createAccount({ balance: 1_000 });
    const second = await app.createAccount({ balance: 2_000 });
    const { ledger } = app.runtime.deps;
    const debits = Array.from({ length: 30 }, (_, index) =>
      ledger.debit({
        accountId: index % 2 ? first.accountId : second.accountId,
        cost: String(1 + index),
        operationKey: `multi:${index}`,
        metadata: { source: 'test' },
      }),
    );
    // An account that does not exist (deleted meanwhile): its row breaks the batch's foreign key.
    const orphan = ledger.debit({
      accountId: 'acct_missing',
      cost: '5',
      operationKey: 'multi:orphan',
      metadata: { source: 'test' },
    });
    const [rows, orphanOutcome] = await Promise.all([
      Promise.all(debits),
      orphan.then(
        () => 'written',
        (error: Error) => error.message,
      ),
    ]);
    expect(orphanOutcome).toMatch(/no account acct_missing/);
    expect(rows.map((row) => row!.operation_key)).toEqual(Array.from({ length: 30 }, (_, index) => `multi:${index}`));
    const oddTotal = Array.from({ length: 30 }, (_, index) => index)
      .filter((index) => index % 2)
      .reduce((sum, index) => sum + 1 + index, 0);
    const evenTotal = Array.from({ length: 30 }, (_, index) => index)
      .filter((index) => index % 2 === 0)
      .reduce((sum, index) => sum + 1 + index, 0);
    expect((await ledgerSum(app, first.accountId)).total).toBe(1_000 - oddTotal);
    expect((await ledgerSum(app, second.accountId)).total).toBe(2_000 - evenTotal);
    expect((await app.request('GET', '/v2/organization/balance', { key: first.key })).body.balance).toBe(
      1_000 - oddTotal,
    );
    expect((await app.request('GET', '/v2/organization/balance', { key: second.key })).body.balance).toBe(
      2_000 - evenTotal,
    );
  });

  it('keeps balance = credits − debits under a burst of billed API calls mixed with direct debits', async () => {
    const { key, accountId } = await app.createAccount({ balance: 50_000 });
    const { ledger } = app.runtime.deps;
    const calls = Array.from({ length: 50 }, (_, index) =>
      index % 2 === 0
        ? app.request('POST', '/v2/embeddings', {
            key,
            body: { model: 'dev-embed', input: `burst number ${index} ${'x '.repeat(index * 3)}` },
          })
        : app.request('POST', '/v2/chat/completions', {
            key,
            body: { model: 'dev-echo', messages: [{ role: 'user', content: `/words ${index * 7}` }] },
          }),
    );
    const direct = Array.from({ length: 30 }, (_, index) =>
      ledger.debit({ accountId, cost: '2', operationKey: `mixed:${index % 10}`, metadata: { source: 'test' } }),
    );
    const [replies] = await Promise.all([Promise.all(calls), Promise.all(direct)]);
    expect(replies.map((reply) => reply.status)).toEqual(Array(50).fill(200));

    const { rows, total } = await ledgerSum(app, accountId);
    const billed = rows.filter(
      (row) => row.operation_key?.startsWith('embedding:') || row.operation_key?.startsWith('chat:'),
    );
    expect(billed).toHaveLength(50);
    expect(new Set(billed.map((row) => row.operation_key)).size).toBe(50);
    expect(rows.filter((row) => row.operation_key?.startsWith('mixed:'))).toHaveLength(10);
    // What the replies say was spent, exactly, rounded up once for the whole account (the carry), left the balance.
    const chatCost = replies
      .filter((_, index) => index % 2 === 1)
      .reduce((sum, reply) => sum + reply.body.usage.cost, 0);
    const embedPrice = app.runtime.deps.catalog.getModel('dev-embed')!.price!;
    const embedCost = replies
      .filter((_, index) => index % 2 === 0)
      .reduce((sum, reply) => sum + (reply.body.usage.prompt_tokens * embedPrice.input) / embedPrice.count, 0);
    expect(total).toBe(50_000 - Math.ceil(Math.round((chatCost + embedCost) * 1e6) / 1e6) - 10 * 2);
    expect((await app.request('GET', '/v2/organization/balance', { key })).body.balance).toBe(total);
    const listed = await app.request('GET', '/v2/organization/transactions?limit=200', { key });
    expect(listed.body.transactions).toHaveLength(rows.length);
  });
});
