import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { TestApp } from '../support/harness';

/** The debit rows an account has, oldest first. */
const debits = (app: TestApp, accountId: string) =>
  app.db
    .selectFrom('ledger_transactions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('type', '=', 'debit')
    .orderBy('seq')
    .execute();

const words = (count: number) => Array.from({ length: count }, (_, index) => `word${index}`).join(' ');

describe('embeddings (dev vendor)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
  });
  afterAll(() => app.close());

  it('embeds one string and bills its cost from the catalog price, exact over the account (the carry)', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1000 });
    const price = app.runtime.deps.catalog.getModel('dev-embed')!.price!;
    let carry = 0;
    for (const count of [3, 250, 1000]) {
      const before = (await app.request('GET', '/v2/organization/balance', { key })).body.balance;
      const reply = await app.request('POST', '/v2/embeddings', {
        key,
        body: { model: 'dev-embed', input: words(count) },
      });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({
        embedding: expect.any(Array),
        model: 'dev-embed',
        usage: { prompt_tokens: count, total_tokens: count },
      });
      expect(reply.body.embedding).toHaveLength(256);
      const norm = Math.sqrt(reply.body.embedding.reduce((sum: number, value: number) => sum + value * value, 0));
      expect(norm).toBeCloseTo(1, 6);

      // Whole kopecks: the exact cost less what the account paid ahead (the carry), rounded up.
      const exact = (count * price.input) / price.count;
      const expectedAmount = Math.ceil(exact - carry - 1e-9);
      carry += expectedAmount - exact;
      const after = (await app.request('GET', '/v2/organization/balance', { key })).body.balance;
      expect(before - after).toBe(expectedAmount);
      const row = (await debits(app, accountId)).at(-1)!;
      expect(row.amount).toBe(expectedAmount);
      expect(row.metadata).toEqual({
        source: 'api',
        vendor: 'dev',
        model: 'dev-embed',
        service: 'embeddings',
        request_id: expect.stringMatching(/^req_[0-9a-f]{24}$/),
        cost: exact,
        carry: expect.any(Number),
      });
      expect(row.metadata.carry).toBeCloseTo(carry, 9);
      expect(row.usage).toEqual({ prompt_tokens: count, completion_tokens: 0, total_tokens: count });
      expect(row.operation_key).toBe(`embedding:${(row.metadata as { request_id: string }).request_id}`);
    }
    // 3 words at 10 kopecks per 1000 tokens is 0.03 kopecks: one whole kopeck, 0.97 carried; 2.5 then takes 2, 10 takes 10.
    expect((await debits(app, accountId)).map((row) => row.amount)).toEqual([1, 2, 10]);
  });

  it('gives the same vector for the same text and a different one for different text', async () => {
    const { key } = await app.createAccount();
    const embed = async (input: string) =>
      (await app.request('POST', '/v2/embeddings', { key, body: { model: 'dev-embed', input } })).body.embedding;
    expect(await embed('the quick brown fox')).toEqual(await embed('the quick brown fox'));
    expect(await embed('the quick brown fox')).not.toEqual(await embed('a slow green turtle'));
  });

  it('encoding_format: float (the default) or base64 (little-endian float32, as OpenAI); anything else is a 400', async () => {
    const { key } = await app.createAccount();
    const embed = (encoding_format?: string) =>
      app.request('POST', '/v2/embeddings', {
        key,
        body: { model: 'dev-embed', input: 'base64 please', ...(encoding_format ? { encoding_format } : {}) },
      });
    const floats = (await embed()).body.embedding as number[];
    expect((await embed('float')).body.embedding).toEqual(floats);
    const encoded = (await embed('base64')).body.embedding as string;
    const bytes = Buffer.from(encoded, 'base64');
    expect(bytes.length).toBe(floats.length * 4);
    const decoded = Array.from({ length: floats.length }, (_, index) => bytes.readFloatLE(index * 4));
    decoded.forEach((value, index) => expect(value).toBeCloseTo(floats[index]!, 6));
    const bad = await embed('int8');
    expect([bad.status, bad.body.error.code]).toEqual([400, 'embedding.invalid_request']);
    expect(bad.body.error.message).toMatch(/encoding_format/);
  });

  it('accepts exactly one string as input', async () => {
    const { key, accountId } = await app.createAccount();
    const cases: Array<[unknown, RegExp]> = [
      [{ model: 'dev-embed', input: ['a', 'b'] }, /exactly one string; arrays are not supported/],
      [{ model: 'dev-embed', input: ['a'] }, /exactly one string; arrays are not supported/],
      [{ model: 'dev-embed', input: 42 }, /exactly one string; a number is not supported/],
      [{ model: 'dev-embed', input: null }, /exactly one string; null is not supported/],
      [{ model: 'dev-embed', input: { text: 'a' } }, /exactly one string; an object is not supported/],
      [{ model: 'dev-embed', input: '' }, /input must not be empty/],
      [{ model: 'dev-embed' }, /input/],
      [{ input: 'hello' }, /model/],
      [{ model: 7, input: 'hello' }, /model/],
      [{ model: 'dev-embed', input: 'hello', dimensions: 8 }, /dimensions/],
      [undefined, /model/],
    ];
    for (const [body, message] of cases) {
      const reply = await app.request('POST', '/v2/embeddings', { key, body });
      expect([body, reply.status]).toEqual([body, 400]);
      expect(reply.body.error.code).toBe('embedding.invalid_request');
      expect(reply.body.error.message).toMatch(message);
    }
    const blank = await app.request('POST', '/v2/embeddings', { key, body: { model: 'dev-embed', input: '   ' } });
    expect(blank.status).toBe(400);
    expect(blank.body.error.code).toBe('embedding.invalid_request');
    expect(blank.body.error.message).toMatch(/dev/);
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('checks the model: unknown, not an embedding model, or a vendor without a key', async () => {
    const { key, accountId } = await app.createAccount();
    const unknown = await app.request('POST', '/v2/embeddings', { key, body: { model: 'no-such-model', input: 'hi' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toEqual({
      code: 'embedding.invalid_request',
      message: expect.stringMatching(/no-such-model/),
    });
    const wrongType = await app.request('POST', '/v2/embeddings', { key, body: { model: 'dev-echo', input: 'hi' } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.code).toBe('embedding.invalid_request');
    const unconfigured = await app.request('POST', '/v2/embeddings', {
      key,
      body: { model: 'text-embedding-3-small', input: 'hi' },
    });
    expect(unconfigured.status).toBe(400);
    expect(unconfigured.body.error).toEqual({
      code: 'model.not_available',
      message: expect.stringMatching(/OPENAI_API_KEY/),
    });
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('refuses with 402 when the balance is not positive, and bills nothing', async () => {
    const empty = await app.createAccount({ balance: 0 });
    const reply = await app.request('POST', '/v2/embeddings', {
      key: empty.key,
      body: { model: 'dev-embed', input: 'hello' },
    });
    expect(reply.status).toBe(402);
    expect(reply.body.error.code).toBe('organization.payment_required');
    expect(await debits(app, empty.accountId)).toEqual([]);

    // A balance driven to zero by billing is refused the same way (api-decisions 11: checked at creation).
    const small = await app.createAccount({ balance: 1 });
    expect(
      (await app.request('POST', '/v2/embeddings', { key: small.key, body: { model: 'dev-embed', input: 'hello' } }))
        .status,
    ).toBe(200);
    expect((await app.request('GET', '/v2/organization/balance', { key: small.key })).body.balance).toBe(0);
    expect(
      (await app.request('POST', '/v2/embeddings', { key: small.key, body: { model: 'dev-embed', input: 'hello' } }))
        .status,
    ).toBe(402);
    expect(await debits(app, small.accountId)).toHaveLength(1);
  });

  it('requires an API key', async () => {
    expect((await app.request('POST', '/v2/embeddings', { body: { model: 'dev-embed', input: 'hi' } })).status).toBe(
      401,
    );
  });
});

describe('embeddings through the OpenAI adapter (fake OpenAI server)', () => {
  let app: TestApp;
  let fake: FakeVendorServer;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    app = await TestApp.start({
      env: { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: fake.baseURL, PROVIDER_MAX_RETRIES: '0' },
    });
  });
  afterAll(async () => {
    await app.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  it('calls the vendor with the upstream id and our key, and bills the vendor-reported tokens', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1000 });
    const price = app.runtime.deps.catalog.getModel('text-embedding-3-small')!.price!;
    fake.script({ embedding: [0.5, -0.25, 0.125], usage: { inputTokens: 12_345, outputTokens: 0 } });
    const reply = await app.request('POST', '/v2/embeddings', {
      key,
      body: { model: 'text-embedding-3-small', input: 'hello vendor' },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      embedding: [0.5, -0.25, 0.125],
      model: 'text-embedding-3-small',
      usage: { prompt_tokens: 12_345, total_tokens: 12_345 },
    });

    expect(fake.requests).toHaveLength(1);
    const [sent] = fake.requests;
    expect(sent.path).toBe('/v1/embeddings');
    expect(sent.headers.authorization).toBe('Bearer test-key');
    expect(sent.body.model).toBe(app.runtime.deps.catalog.getModel('text-embedding-3-small')!.upstreamId);
    expect([sent.body.input].flat()).toEqual(['hello vendor']);

    // 12345 tokens × 200 kopecks / 1M = 2.469 kopecks → 3 debited.
    const exact = (12_345 * price.input) / price.count;
    const [row] = await debits(app, accountId);
    expect(row.amount).toBe(Math.ceil(exact));
    expect(row.amount).toBe(3);
    expect(row.metadata).toMatchObject({ vendor: 'openai', model: 'text-embedding-3-small', service: 'embeddings' });
    expect((await app.request('GET', '/v2/organization/balance', { key })).body.balance).toBe(997);
  });

  it('reports an upstream 401 as our 500 naming the vendor, never as a 401, and bills nothing', async () => {
    const { key, accountId } = await app.createAccount();
    fake.script({ status: 401 });
    const reply = await app.request('POST', '/v2/embeddings', {
      key,
      body: { model: 'text-embedding-3-small', input: 'hello' },
    });
    expect(reply.status).toBe(500);
    expect(reply.body.error.code).toBe('embedding.execution_failed');
    expect(reply.body.error.message).toMatch(/^Vendor openai rejected the request \(401\)/);
    expect(JSON.stringify(reply.body)).not.toContain('test-key');
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('maps other vendor failures: 400 stays a 400, 429 and 5xx are 500s naming the vendor', async () => {
    const { key, accountId } = await app.createAccount();
    const call = () =>
      app.request('POST', '/v2/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'hello' } });
    fake.script({ status: 400, errorMessage: 'This model maximum context length is 8192 tokens.' });
    const bad = await call();
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('embedding.invalid_request');
    expect(bad.body.error.message).toMatch(/^Vendor openai rejected the request as invalid \(400\).*8192/);
    fake.script({ status: 429 });
    const limited = await call();
    expect(limited.status).toBe(500);
    expect(limited.body.error).toEqual({
      code: 'embedding.execution_failed',
      message: expect.stringMatching(/^Vendor openai is rate limiting requests \(429\)/),
    });
    fake.script({ status: 503 });
    const down = await call();
    expect(down.status).toBe(500);
    expect(down.body.error.message).toMatch(/^Vendor openai .*\(503\)/);
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('does not call the vendor when the balance is not positive', async () => {
    const { key } = await app.createAccount({ balance: 0 });
    const before = fake.requestCount;
    const reply = await app.request('POST', '/v2/embeddings', {
      key,
      body: { model: 'text-embedding-3-small', input: 'hello' },
    });
    expect(reply.status).toBe(402);
    expect(fake.requestCount).toBe(before);
  });

  it('answers 400 model.not_available for a vendor without a key', async () => {
    const { key } = await app.createAccount();
    const google = app.runtime.deps.catalog.listModels({ type: 'embed', vendor: 'google' })[0];
    const reply = await app.request('POST', '/v2/embeddings', { key, body: { model: google.code, input: 'hello' } });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toEqual({ code: 'model.not_available', message: expect.stringMatching(/GEMINI_API_KEY/) });
  });
});
