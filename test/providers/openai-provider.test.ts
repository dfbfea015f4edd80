import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { createOpenAIProvider } from '../../src/providers/openai/openai-provider';
import type { VendorAdapterOptions } from '../../src/providers/provider';
import { WEATHER_TOOL, collect, describeAdapterContract } from './adapter-contract';

const API_KEY = 'sk-test-openai-0123456789abcdefSECRET';

describeAdapterContract({
  vendor: 'openai',
  apiKey: API_KEY,
  startFake: () => startFakeOpenAI(),
  createProvider: createOpenAIProvider,
  model: 'gpt-4.1',
  embeddingModel: 'text-embedding-3-small',
  sendsRequestId: true,
  hasStreamErrorEvents: true,
});

describe('openai adapter wire format', () => {
  let fake: FakeVendorServer;
  const options = (): VendorAdapterOptions => ({
    vendor: 'openai',
    apiKey: API_KEY,
    baseURL: fake.baseURL,
    timeoutMs: 5_000,
    maxRetries: 0,
  });

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => fake.reset());

  it('calls the Responses API with the bearer key, tools, settings and provider options', async () => {
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
    await createOpenAIProvider(options()).languageModel!.generateText({
      model: 'gpt-5-mini',
      instructions: 'You are terse.',
      items: [{ type: 'message', role: 'user', text: 'Weather in Oslo?' }],
      tools: [WEATHER_TOOL],
      toolChoice: { type: 'function', name: 'get_weather' },
      parallelToolCalls: false,
      maxOutputTokens: 256,
      reasoningEffort: 'low',
      verbosity: 'high',
    });
    const sent = fake.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/responses');
    expect(sent.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent.body).toMatchObject({
      model: 'gpt-5-mini',
      store: false,
      parallel_tool_calls: false,
      max_output_tokens: 256,
      reasoning: { effort: 'low' },
      text: { verbosity: 'high' },
      tool_choice: { type: 'function', name: 'get_weather' },
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Current weather for a city.',
          parameters: WEATHER_TOOL.parameters,
        },
      ],
    });
    expect(sent.body.stream).toBeUndefined();
    // Instructions go first, as a system/developer message; then the user turn.
    expect(sent.body.input[0]).toMatchObject({ content: 'You are terse.' });
    expect(['system', 'developer']).toContain(sent.body.input[0].role);
    expect(sent.body.input[1]).toMatchObject({
      role: 'user',
      content: [{ type: 'input_text', text: 'Weather in Oslo?' }],
    });
  });

  it('sends temperature and top_p for non-reasoning models', async () => {
    fake.script({ text: 'ok' });
    await createOpenAIProvider(options()).languageModel!.generateText({
      model: 'gpt-4.1',
      items: [{ type: 'message', role: 'user', text: 'hi' }],
      temperature: 0.3,
      topP: 0.9,
    });
    expect(fake.requests[0]!.body).toMatchObject({ temperature: 0.3, top_p: 0.9 });
  });

  it('round-trips a function call: the call and its output are sent back as Responses input items', async () => {
    fake.script(
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, callId: 'call_abc' }] },
      { text: 'It is 3°C in Oslo.' },
    );
    const model = createOpenAIProvider(options()).languageModel!;
    const first = await model.generateText({
      model: 'gpt-4.1',
      items: [{ type: 'message', role: 'user', text: 'Weather in Oslo?' }],
      tools: [WEATHER_TOOL],
    });
    expect(first.toolCalls).toEqual([{ callId: 'call_abc', name: 'get_weather', arguments: '{"city":"Oslo"}' }]);

    const second = await model.generateText({
      model: 'gpt-4.1',
      items: [
        { type: 'message', role: 'user', text: 'Weather in Oslo?' },
        { type: 'function_call', ...first.toolCalls[0]! },
        { type: 'function_call_output', callId: 'call_abc', output: '{"temperature":3}' },
      ],
      tools: [WEATHER_TOOL],
    });
    expect(second.text).toBe('It is 3°C in Oslo.');
    const input = fake.requests[1]!.body.input;
    expect(input).toContainEqual(
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_abc',
        name: 'get_weather',
        arguments: '{"city":"Oslo"}',
      }),
    );
    expect(input).toContainEqual(
      expect.objectContaining({ type: 'function_call_output', call_id: 'call_abc', output: '{"temperature":3}' }),
    );
  });

  it('streams from the Responses API as SSE', async () => {
    fake.script({ textChunks: ['a', 'b'] });
    const { parts } = await collect(
      createOpenAIProvider(options()).languageModel!.streamText({
        model: 'gpt-4.1',
        items: [{ type: 'message', role: 'user', text: 'hi' }],
      }),
    );
    expect(parts.map((part) => part.type)).toEqual(['text-delta', 'text-delta', 'finish']);
    expect(fake.requests[0]!.body.stream).toBe(true);
  });

  it('embeds through POST /v1/embeddings', async () => {
    fake.script({ embedding: [0.5, 0.5], usage: { inputTokens: 3, outputTokens: 0 } });
    const result = await createOpenAIProvider(options()).embeddingModel!.embed({
      model: 'text-embedding-3-small',
      input: 'hello world',
    });
    expect(result).toEqual({ embedding: [0.5, 0.5], usage: { inputTokens: 3 } });
    expect(fake.requests[0]).toMatchObject({
      path: '/v1/embeddings',
      headers: expect.objectContaining({ authorization: `Bearer ${API_KEY}` }),
      body: expect.objectContaining({ model: 'text-embedding-3-small', input: ['hello world'] }),
    });
  });

  it('honours retry-after-ms and keeps the request id of a rate limit that is not retried', async () => {
    fake.script({ status: 429, retryAfterMs: 250 }, { status: 429, retryAfter: '120' });
    const model = createOpenAIProvider({ ...options(), maxRetries: 3 }).languageModel!;
    const error = await model
      .generateText({ model: 'gpt-4.1', items: [{ type: 'message', role: 'user', text: 'hi' }] })
      .catch((e: unknown) => e);
    // The second 429 asks for two minutes: beyond the cap, so the error goes up with the hint.
    expect(error).toMatchObject({ kind: 'rate_limit', status: 429, retryAfterMs: 120_000 });
    expect((error as { vendorRequestId?: string }).vendorRequestId).toMatch(/^req_/);
    expect(fake.requests).toHaveLength(2);
    const gap = fake.requests[1]!.receivedAt - fake.requests[0]!.receivedAt;
    expect(gap).toBeGreaterThanOrEqual(245);
    expect(gap).toBeLessThan(1_000);
  });
});
