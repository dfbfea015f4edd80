import OpenAI from 'openai';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { TestApp, useTestApp, type TestSuite } from '../support/harness';
import { pollUntil } from '../responses/helpers';

/** Streamed chat completions on /openai/v1 through the official `openai` package: chunks, usage, tool calls, billing. */
const client = (suite: TestSuite) =>
  new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });

const chatDebits = async (suite: TestSuite) =>
  (
    await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key })
  ).body.transactions.filter((row: any) => row.metadata.service === 'chat');

describe('/openai/v1/chat/completions with stream: true', () => {
  const suite = useTestApp();

  it("chunks in OpenAI's shape: the role, the text deltas, the finish reason, then the usage chunk; billed once", async () => {
    const stream = await client(suite).chat.completions.create({
      model: 'dev-echo',
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]).toMatchObject({
      object: 'chat.completion.chunk',
      model: 'dev-echo',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      usage: null,
    });
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    const text = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta.content ?? '')).join('');
    expect(text).toBe('one two three four');
    expect(chunks.at(-2)!.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 },
    });
    expect(await chatDebits(suite)).toHaveLength(1);
  });

  it('without include_usage no chunk carries usage; the stream() helper assembles the completion', async () => {
    const raw = await fetch(`${suite.app.baseUrl}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'dev-echo', messages: [{ role: 'user', content: 'plain stream' }], stream: true }),
    });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await raw.text()).split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    expect(
      frames.slice(0, -1).every((frame) => frame.startsWith('data: {') && !('usage' in JSON.parse(frame.slice(6)))),
    ).toBe(true);

    const helper = client(suite).chat.completions.stream({
      model: 'dev-echo',
      messages: [{ role: 'user', content: 'assembled by the helper' }],
    });
    const final = await helper.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe('assembled by the helper');
    expect(final.choices[0]!.finish_reason).toBe('stop');
  });

  it('a tool call arrives as a tool_calls delta with its index and id; finish_reason tool_calls', async () => {
    const weather = {
      type: 'function' as const,
      function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    };
    const helper = client(suite).chat.completions.stream({
      model: 'dev-echo',
      messages: [{ role: 'user', content: '/call get_weather {"city":"Oslo"}' }],
      tools: [weather],
    });
    const toolDeltas: unknown[] = [];
    helper.on('chunk', (chunk) => toolDeltas.push(...(chunk.choices[0]?.delta.tool_calls ?? [])));
    const final = await helper.finalChatCompletion();
    expect(toolDeltas).toEqual([
      {
        index: 0,
        id: expect.stringMatching(/^call_/),
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
      },
    ]);
    const choice = final.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls).toMatchObject([
      {
        id: expect.stringMatching(/^call_/),
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
      },
    ]);
  });

  it('refused before the stream starts: a typed error with a status, not a broken stream', async () => {
    await expect(
      client(suite).chat.completions.create({
        model: 'no-such-model',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    // A vendor's rate limit that outlasted the retries is OpenAI's 429 here (with Retry-After).
    await expect(
      client(suite).chat.completions.create({
        model: 'dev-echo',
        messages: [{ role: 'user', content: '/error rate_limit' }],
        stream: true,
      }),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    await expect(
      client(suite).chat.completions.create({
        model: 'dev-echo',
        messages: [{ role: 'user', content: '/error server' }],
        stream: true,
      }),
    ).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    const poor = await suite.app.createAccount({ balance: 0 });
    const broke = new OpenAI({ apiKey: poor.key, baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });
    const error = await broke.chat.completions
      .create({ model: 'dev-echo', messages: [{ role: 'user', content: 'x' }], stream: true })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
  });

  it('a client that leaves midway is billed for the whole generation, and nothing stays held', async () => {
    const before = (await chatDebits(suite)).length;
    const stream = await client(suite).chat.completions.create({
      model: 'dev-echo',
      messages: [{ role: 'user', content: '/delay 5 /words 60' }],
      stream: true,
    });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) break; // leaves after the first word
    }
    const debits = await pollUntil(
      () => chatDebits(suite),
      (rows) => rows.length > before,
    );
    expect(debits[0].usage).toMatchObject({ completion_tokens: 60 });
    const balance = await pollUntil(
      () => suite.app.request('GET', '/v2/organization/balance', { key: suite.key }),
      (reply) => reply.body.available === reply.body.balance,
    );
    expect(balance.status).toBe(200);
  });
});

describe('a chat stream whose vendor fails midway', () => {
  let fake: FakeVendorServer;
  let app: TestApp;
  let account: { key: string; accountId: string };
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    app = await TestApp.start({ env: { OPENAI_API_KEY: 'sk-fake-openai-key', OPENAI_BASE_URL: fake.baseURL } });
    account = await app.createAccount();
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  it("ends with OpenAI's error frame, which the SDK raises; nothing billed, nothing held", async () => {
    fake.script({ text: 'one two three four five', dropAfterDeltas: 2 });
    const openai = new OpenAI({ apiKey: account.key, baseURL: `${app.baseUrl}/openai/v1`, maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const texts: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) texts.push(chunk.choices[0]?.delta.content ?? '');
    })().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/openai/i);
    expect(texts.join('')).not.toBe('');
    const balance = (await app.request('GET', '/v2/organization/balance', { key: account.key })).body;
    expect(balance).toEqual({ balance: 1_000_000, available: 1_000_000 });
  });
});
