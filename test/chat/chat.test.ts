import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { catalogWithVariant } from '../support/catalog-file';
import { TestApp } from '../support/harness';

const debits = (app: TestApp, accountId: string) =>
  app.db
    .selectFrom('ledger_transactions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('type', '=', 'debit')
    .orderBy('seq')
    .execute();

describe('chat completions (dev vendor)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start({
      env: { CATALOG_PATH: catalogWithVariant('dev-echo', 'dev-echo-responses-only', { protocols: ['responses'] }) },
    });
  });
  afterAll(() => app.close());

  const chat = (key: string, body: unknown) => app.request('POST', '/v2/chat/completions', { key, body });

  it('answers in the legacy shape and bills the exact cost rounded up', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1000 });
    const price = app.runtime.deps.catalog.getModel('dev-echo')!.price!;
    const started = Math.floor(Date.now() / 1000);
    const reply = await chat(key, {
      model: 'dev-echo',
      instructions: 'Be brief.',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
        { role: 'user', content: 'the second question here' },
      ],
      temperature: 0.3,
    });
    expect(reply.status).toBe(200);
    // Input words: 2 (instructions) + 3 + 2 + 2 + 4 = 13; output: the echoed 4 words.
    const cost = (13 * price.input + 4 * price.output) / price.count;
    expect(reply.body).toEqual({
      created: expect.any(Number),
      model: 'dev-echo',
      message: { role: 'assistant', content: 'the second question here' },
      tools_calls: [],
      usage: { prompt_tokens: 13, completion_tokens: 4, total_tokens: 17, cost },
      finish_reason: 'COMPLETE',
    });
    expect(cost).toBeCloseTo(2.1, 10);
    expect(reply.body.created).toBeGreaterThanOrEqual(started);
    expect(reply.body.created).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));

    const [row] = await debits(app, accountId);
    expect(row.amount).toBe(Math.ceil(cost));
    expect(row.amount).toBe(3);
    // The account's first debit: its exact cost rounded up; the account carries the 0.9 paid ahead.
    expect(row.metadata).toEqual({
      source: 'api',
      vendor: 'dev',
      model: 'dev-echo',
      service: 'chat',
      request_id: expect.stringMatching(/^req_/),
      cost: 2.1,
      carry: 0.9,
    });
    expect(row.usage).toEqual({ prompt_tokens: 13, completion_tokens: 4, total_tokens: 17 });
    expect(row.operation_key).toBe(`chat:${(row.metadata as { request_id: string }).request_id}`);
    expect((await app.request('GET', '/v2/organization/balance', { key })).body.balance).toBe(997);
  });

  it('reports MAX_TOKENS when max_tokens cuts the answer', async () => {
    const { key } = await app.createAccount();
    const reply = await chat(key, {
      model: 'dev-echo',
      messages: [{ role: 'user', content: '/words 10' }],
      max_tokens: 4,
    });
    expect(reply.status).toBe(200);
    expect(reply.body.message.content).toBe('w1 w2 w3 w4');
    expect(reply.body.finish_reason).toBe('MAX_TOKENS');
    expect(reply.body.usage).toMatchObject({ completion_tokens: 4 });
  });

  it('takes function tools flat or nested and returns tools_calls', async () => {
    const { key } = await app.createAccount();
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    for (const tool of [
      { type: 'function', name: 'get_weather', description: 'Weather by city', parameters },
      { type: 'function', function: { name: 'get_weather', description: 'Weather by city', parameters } },
      { type: 'function', function: { name: 'get_weather' } },
    ]) {
      const reply = await chat(key, {
        model: 'dev-echo',
        messages: [{ role: 'user', content: '/call get_weather {"city":"Paris"}' }],
        tools: [tool],
      });
      expect(reply.status).toBe(200);
      expect(reply.body.tools_calls).toEqual([
        { id: expect.any(String), type: 'function', name: 'get_weather', arguments: '{"city":"Paris"}' },
      ]);
      expect(reply.body.finish_reason).toBe('TOOL_CALLS');
      expect(reply.body.message).toEqual({ role: 'assistant', content: '' });
    }
  });

  it('refuses server tools with a 400 naming the vendor, which does not run them (the dev vendor runs none)', async () => {
    const { key, accountId } = await app.createAccount();
    for (const tool of [{ type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'code_interpreter' }]) {
      const reply = await chat(key, {
        model: 'dev-echo',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'function', name: 'lookup' }, tool],
      });
      expect(reply.status).toBe(400);
      expect(reply.body.error).toEqual({
        code: 'chat.invalid_request',
        message: `tools[1]: vendor dev (model dev-echo) does not run ${tool.type} tools; use a model of a vendor that does, or function tools.`,
      });
    }
    // A file search names its stores.
    const bare = await chat(key, {
      model: 'dev-echo',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'file_search' }],
    });
    expect([bare.status, bare.body.error.message]).toEqual([400, expect.stringContaining('tools[0].vector_store_ids')]);
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('validates the body', async () => {
    const { key, accountId } = await app.createAccount();
    const ok = { model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] };
    const cases: Array<[unknown, RegExp]> = [
      [{ messages: ok.messages }, /model/],
      [{ model: 'dev-echo' }, /messages/],
      [{ ...ok, messages: [] }, /at least one message/],
      [{ ...ok, messages: [{ role: 'robot', content: 'hi' }] }, /messages\[0\]\.role/],
      [{ ...ok, messages: [{ role: 'user', content: 5 }] }, /messages\[0\]\.content/],
      [{ ...ok, messages: [{ role: 'user' }] }, /messages\[0\]\.content/],
      [{ ...ok, messages: [{ role: 'user', content: 'hi', name: 'x' }] }, /name/],
      [{ ...ok, temperature: 2.5 }, /temperature/],
      [{ ...ok, temperature: -0.1 }, /temperature/],
      [{ ...ok, max_tokens: 0 }, /max_tokens/],
      [{ ...ok, max_tokens: 1.5 }, /max_tokens/],
      [{ ...ok, max_tokens: 100_000 }, /max_tokens is at most 4096/],
      [{ ...ok, instructions: 7 }, /instructions/],
      [{ ...ok, stream: true }, /stream/],
      [{ ...ok, tools: [{ type: 'web_search' }] }, /tools\[0\]\.type/],
      [{ ...ok, tools: [{ type: 'function' }] }, /tools\[0\]\.name/],
      [{ ...ok, tools: [{ type: 'function', function: { description: 'x' } }] }, /tools\[0\]\.function\.name/],
      [{ ...ok, tools: [{ type: 'function', name: 'bad name!' }] }, /tools\[0\]\.name/],
      [{ ...ok, tools: [{ type: 'function', name: 'f', parameters: 'nope' }] }, /tools\[0\]\.parameters/],
      [{ ...ok, tools: [{ type: 'function', name: 'f', extra: 1 }] }, /extra/],
      [{ ...ok, tools: {} }, /tools/],
    ];
    for (const [body, message] of cases) {
      const reply = await chat(key, body);
      expect([body, reply.status]).toEqual([body, 400]);
      expect(reply.body.error.code).toBe('chat.invalid_request');
      expect([body, reply.body.error.message]).toEqual([body, expect.stringMatching(message)]);
    }
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('checks the model: unknown, wrong type, no chat_completions protocol, vendor not configured', async () => {
    const { key, accountId } = await app.createAccount();
    const messages = [{ role: 'user', content: 'hi' }];
    const unknown = await chat(key, { model: 'no-such-model', messages });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('chat.invalid_request');
    const embed = await chat(key, { model: 'dev-embed', messages });
    expect(embed.status).toBe(400);
    expect(embed.body.error.code).toBe('chat.invalid_request');
    const responsesOnly = await chat(key, { model: 'dev-echo-responses-only', messages });
    expect(responsesOnly.status).toBe(400);
    expect(responsesOnly.body.error).toEqual({
      code: 'chat.invalid_request',
      message: expect.stringMatching(/does not support chat completions/),
    });
    const unconfigured = await chat(key, { model: 'gpt-4.1-mini', messages });
    expect(unconfigured.status).toBe(400);
    expect(unconfigured.body.error).toEqual({
      code: 'model.not_available',
      message: expect.stringMatching(/OPENAI_API_KEY/),
    });
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('turns vendor failures into errors naming the vendor, never the vendor status', async () => {
    const { key, accountId } = await app.createAccount();
    const failing = async (content: string) => chat(key, { model: 'dev-echo', messages: [{ role: 'user', content }] });
    const server = await failing('/error');
    expect(server.status).toBe(500);
    expect(server.body.error).toEqual({
      code: 'chat.execution_failed',
      message: expect.stringMatching(/^Vendor dev /),
    });
    // The vendor refusing our credentials is our problem, not a 401/403 for the client.
    const auth = await failing('/error auth');
    expect(auth.status).toBe(500);
    expect(auth.body.error).toEqual({
      code: 'chat.execution_failed',
      message: expect.stringMatching(/^Vendor dev rejected the request/),
    });
    const rateLimited = await failing('/error rate_limit');
    expect(rateLimited.status).toBe(500);
    expect(rateLimited.body.error.message).toMatch(/Vendor dev is rate limiting/);
    const badRequest = await failing('/error bad_request');
    expect(badRequest.status).toBe(400);
    expect(badRequest.body.error.code).toBe('chat.invalid_request');
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('refuses with 402 when the balance is not positive', async () => {
    const { key, accountId } = await app.createAccount({ balance: 0 });
    const reply = await chat(key, { model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] });
    expect(reply.status).toBe(402);
    expect(reply.body.error.code).toBe('organization.payment_required');
    const v1 = await app.request('POST', '/v1/chat/completions', {
      key,
      body: { model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(v1.status).toBe(402);
    expect(await debits(app, accountId)).toEqual([]);
  });

  describe('v1', () => {
    it('answers {message} and bills like the legacy endpoint', async () => {
      const { key, accountId } = await app.createAccount({ balance: 100 });
      const reply = await app.request('POST', '/v1/chat/completions', {
        key,
        body: {
          model: 'dev-echo',
          messages: [
            { role: 'system', content: 'sys' },
            { role: 'user', content: 'echo these five words please' },
          ],
        },
      });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ message: { role: 'assistant', content: 'echo these five words please' } });
      const [row] = await debits(app, accountId);
      // 6 input words × 0.1 + 5 output words × 0.2 = 1.6 kopecks → 2.
      expect(row.amount).toBe(2);
      expect(row.metadata).toMatchObject({ service: 'chat', model: 'dev-echo', vendor: 'dev', source: 'api' });
      expect(row.usage).toEqual({ prompt_tokens: 6, completion_tokens: 5, total_tokens: 11 });
    });

    it('takes only model and messages', async () => {
      const { key } = await app.createAccount();
      const messages = [{ role: 'user', content: 'hi' }];
      for (const body of [
        { model: 'dev-echo', messages, temperature: 1 },
        { model: 'dev-echo' },
        { messages },
        { model: 'dev-echo', messages: [] },
      ]) {
        const reply = await app.request('POST', '/v1/chat/completions', { key, body });
        expect(reply.status).toBe(400);
        expect(reply.body.error.code).toBe('chat.invalid_request');
      }
      expect(
        (await app.request('POST', '/v1/chat/completions', { body: { model: 'dev-echo', messages } })).status,
      ).toBe(401);
    });
  });
});

describe('chat completions through the OpenAI adapter (fake OpenAI server)', () => {
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

  const chat = (key: string, body: unknown) => app.request('POST', '/v2/chat/completions', { key, body });

  it('sends the conversation to the vendor and bills its reported tokens exactly', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1000 });
    const model = app.runtime.deps.catalog.getModel('gpt-4.1-mini')!;
    fake.script({ text: 'Bonjour !', usage: { inputTokens: 1234, outputTokens: 567 } });
    const reply = await chat(key, {
      model: 'gpt-4.1-mini',
      instructions: 'Answer in French.',
      messages: [{ role: 'user', content: 'Say hello' }],
      temperature: 0.5,
      max_tokens: 300,
    });
    expect(reply.status).toBe(200);
    const cost = (1234 * model.price!.input + 567 * model.price!.output) / model.price!.count;
    expect(cost).toBeCloseTo(14.008, 10);
    expect(reply.body).toEqual({
      created: expect.any(Number),
      model: 'gpt-4.1-mini',
      message: { role: 'assistant', content: 'Bonjour !' },
      tools_calls: [],
      usage: { prompt_tokens: 1234, completion_tokens: 567, total_tokens: 1801, cost },
      finish_reason: 'COMPLETE',
    });

    expect(fake.requests).toHaveLength(1);
    const [sent] = fake.requests;
    expect(sent.headers.authorization).toBe('Bearer test-key');
    expect(sent.body.model).toBe(model.upstreamId);
    expect(sent.body.temperature).toBe(0.5);
    expect(sent.body.max_output_tokens ?? sent.body.max_tokens).toBe(300);
    expect(sent.rawBody).toContain('Answer in French.');
    expect(sent.rawBody).toContain('Say hello');

    const [row] = await debits(app, accountId);
    expect(row.amount).toBe(Math.ceil(cost));
    expect(row.amount).toBe(15);
    expect(row.metadata).toEqual({
      source: 'api',
      vendor: 'openai',
      model: 'gpt-4.1-mini',
      service: 'chat',
      request_id: expect.stringMatching(/^req_/),
      cost,
      carry: expect.any(Number),
    });
    expect(row.usage).toEqual({ prompt_tokens: 1234, completion_tokens: 567, total_tokens: 1801 });
  });

  it('passes function tools and returns the vendor tool calls', async () => {
    const { key } = await app.createAccount();
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' }, callId: 'call_abc' }] });
    const reply = await chat(key, {
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
    });
    expect(reply.status).toBe(200);
    expect(reply.body.tools_calls).toEqual([
      { id: 'call_abc', type: 'function', name: 'get_weather', arguments: '{"city":"Paris"}' },
    ]);
    expect(reply.body.finish_reason).toBe('TOOL_CALLS');
    expect(fake.requests[0].rawBody).toContain('get_weather');
  });

  it('maps vendor finish reasons: length → MAX_TOKENS, content_filter → CONTENT_FILTER', async () => {
    const { key } = await app.createAccount();
    fake.script({ text: 'Partial', finishReason: 'length' });
    expect(
      (await chat(key, { model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'long' }] })).body.finish_reason,
    ).toBe('MAX_TOKENS');
    fake.script({ text: '', finishReason: 'content_filter' });
    expect(
      (await chat(key, { model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'bad' }] })).body.finish_reason,
    ).toBe('CONTENT_FILTER');
  });

  it('reports an upstream 401 as our 500 naming the vendor, never as a 401, and bills nothing', async () => {
    const { key, accountId } = await app.createAccount();
    fake.script({ status: 401 });
    const reply = await chat(key, { model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(reply.status).toBe(500);
    expect(reply.body.error.code).toBe('chat.execution_failed');
    expect(reply.body.error.message).toMatch(/^Vendor openai rejected the request \(401\)/);
    expect(JSON.stringify(reply.body)).not.toContain('test-key');
    fake.script({ status: 403 });
    const v1 = await app.request('POST', '/v1/chat/completions', {
      key,
      body: { model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(v1.status).toBe(500);
    expect(v1.body.error.message).toMatch(/^Vendor openai rejected the request \(403\)/);
    expect(await debits(app, accountId)).toEqual([]);
  });

  it('answers v1 from the vendor reply', async () => {
    const { key, accountId } = await app.createAccount();
    fake.script({ text: 'Hi from v1', usage: { inputTokens: 10, outputTokens: 3 } });
    const reply = await app.request('POST', '/v1/chat/completions', {
      key,
      body: { model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ message: { role: 'assistant', content: 'Hi from v1' } });
    // 10 × 0.004 + 3 × 0.016 = 0.088 kopecks: one whole kopeck.
    expect((await debits(app, accountId)).map((row) => row.amount)).toEqual([1]);
  });

  it('answers 400 model.not_available for a vendor without a key, without calling anyone', async () => {
    const { key } = await app.createAccount();
    const claude = app.runtime.deps.catalog.listModels({ type: 'llm', vendor: 'anthropic' })[0];
    const reply = await chat(key, { model: claude.code, messages: [{ role: 'user', content: 'hi' }] });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toEqual({
      code: 'model.not_available',
      message: expect.stringMatching(/ANTHROPIC_API_KEY/),
    });
    expect(fake.requests).toHaveLength(0);
  });
});
