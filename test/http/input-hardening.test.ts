import { TestApp, useTestApp } from '../support/harness';

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
    const before = await app.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const account = await app.admin('POST', '/admin/accounts', { name: 'a\u0000b', balance: 10 });
    expect(account.status).toBe(400);
    expect(account.body.error.code).toBe('admin.invalid_request');
    const after = await app.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
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
      body: {
        model: 'dev-echo',
        name: 'escapes',
        instructions: text,
        tool_resources: { note: text },
        metadata: { hint: text },
      },
    });
    expect(created.status).toBe(200);
    const read = await app.request('GET', `/v2/assistants/${created.body.id}`, { key });
    expect(read.body).toMatchObject({ instructions: text, tool_resources: { note: text }, metadata: { hint: text } });

    const refusedNul = await app.request('POST', '/v2/assistants', {
      key,
      body: { model: 'dev-echo', name: 'nul', tool_resources: { deep: [{ 'k\u0000': 1 }] } },
    });
    expect(refusedNul.status).toBe(400);
    expect(refusedNul.body).toEqual({
      error: {
        code: 'assistant.invalid_request',
        message: 'tool_resources.deep[0].k\u0000 (a key): must not contain NUL (\\u0000) characters',
      },
    });
  });

  it('refuses NUL and unpaired surrogates anywhere in a Response body with a 400 naming the field, and creates nothing', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1000 });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ input: 'a\u0000b' }, /^input: must not contain NUL/],
      [{ input: 'a\ud800b' }, /^input: must not contain unpaired UTF-16 surrogates/],
      [{ input: 'x', instructions: '\udc00' }, /^instructions: .*surrogates/],
      [{ input: 'x', metadata: { note: 'n\u0000' } }, /^metadata\.note: .*NUL/],
      [{ input: [{ type: 'function_call_output', call_id: 'c1', output: 'o\u0000' }] }, /^input\[0\]\.output: .*NUL/],
    ];
    for (const [body, message] of cases) {
      for (const headers of [{}, { 'Idempotency-Key': `nul-${Math.random()}` }] as Array<Record<string, string>>) {
        const reply = await app.request('POST', '/v2/responses', {
          key,
          body: { model: 'dev-echo', background: false, ...body },
          headers,
        });
        expect({ body, status: reply.status, code: reply.body.error?.code }).toEqual({
          body,
          status: 400,
          code: 'response.invalid_request',
        });
        expect(reply.body.error.message).toMatch(message);
      }
    }
    const embedding = await app.request('POST', '/v2/embeddings', {
      key,
      body: { model: 'dev-embed', input: 'a\u0000b' },
    });
    expect([embedding.status, embedding.body.error.code, embedding.body.error.message]).toEqual([
      400,
      'embedding.invalid_request',
      'input: must not contain NUL (\\u0000) characters',
    ]);
    const conversation = await app.request('POST', '/v2/conversations', {
      key,
      body: { items: [{ type: 'message', role: 'user', content: 'a\u0000' }] },
    });
    expect([conversation.status, conversation.body.error.code]).toEqual([400, 'conversation.invalid_request']);
    expect(conversation.body.error.message).toBe('items[0].content: must not contain NUL (\\u0000) characters');
    const created = await app.db
      .selectFrom('responses')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(Number(created.n)).toBe(0);
    // An escaped emoji (a surrogate pair) is ordinary text.
    const emoji = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', background: false, input: 'smile \ud83d\ude00' },
    });
    expect(emoji.status).toBe(200);
    expect(emoji.body.output[0].content[0].text).toBe('smile \ud83d\ude00');
  });
});

describe('input hardening: nesting depth of JSON bodies', () => {
  const suite = useTestApp({ balance: 1000 });

  /** A function tool whose parameters nest `depth` levels of arrays below the body's own two levels. */
  const toolBody = (depth: number) =>
    `{"model":"dev-echo","input":"x","background":false,"tools":[{"type":"function","name":"f","parameters":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}]}`;

  it('refuses a body nested deeper than 64 levels with a 400 before it is parsed or stored, and keeps serving', async () => {
    for (const depth of [62, 1000, 200_000]) {
      const reply = await suite.app.request('POST', '/v2/responses', {
        key: suite.key,
        rawBody: toolBody(depth),
        headers: { 'content-type': 'application/json' },
      });
      expect({ depth, status: reply.status, body: reply.body }).toEqual({
        depth,
        status: 400,
        body: {
          error: {
            code: 'response.invalid_request',
            message: 'The request body nests arrays and objects deeper than 64 levels.',
          },
        },
      });
    }
    // Every route answers it in its own area.
    const deepItems = `{"items":[{"type":"message","role":"user","content":${'['.repeat(100)}${']'.repeat(100)}}]}`;
    const conversation = await suite.app.request('POST', '/v2/conversations', {
      key: suite.key,
      rawBody: deepItems,
      headers: { 'content-type': 'application/json' },
    });
    expect([conversation.status, conversation.body.error.code]).toEqual([400, 'conversation.invalid_request']);
    const deepEmbedding = await suite.app.request('POST', '/v2/embeddings', {
      key: suite.key,
      rawBody: `{"model":"dev-embed","input":"x","extra":${'['.repeat(70)}${']'.repeat(70)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect([deepEmbedding.status, deepEmbedding.body.error]).toEqual([
      400,
      {
        code: 'embedding.invalid_request',
        message: 'The request body nests arrays and objects deeper than 64 levels.',
      },
    ]);
    const created = await suite.app.db
      .selectFrom('responses')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', suite.accountId)
      .executeTakeFirstOrThrow();
    expect(Number(created.n)).toBe(0);
    const balance = await suite.app.request('GET', '/v2/organization/balance', { key: suite.key });
    expect(balance.status).toBe(200);
  });

  it('accepts nesting up to the limit, stored and served like any other', async () => {
    // body { tools [ { parameters { a [ ... ] } } ] }: four levels before the arrays.
    const reply = await suite.app.request('POST', '/v2/responses', {
      key: suite.key,
      rawBody: toolBody(60),
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.status).toBe('completed');
    const stored = await suite.app.db
      .selectFrom('responses')
      .select('request')
      .where('id', '=', reply.body.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(stored.request)).toContain('['.repeat(60));
  });
});
