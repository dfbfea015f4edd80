import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { createOpenAICompatibleProvider } from '../../src/providers/openai-compatible/openai-compatible-provider';
import type { VendorAdapterOptions } from '../../src/providers/provider';
import { WEATHER_TOOL, collect, describeAdapterContract } from './adapter-contract';

const API_KEY = 'sk-test-compatible-0123456789abcdefSECRET';

describeAdapterContract({
  vendor: 'groq',
  apiKey: API_KEY,
  startFake: () => startFakeOpenAI(),
  createProvider: createOpenAICompatibleProvider,
  model: 'llama-3.3-70b-versatile',
  embeddingModel: 'nomic-embed-text',
  sendsRequestId: true,
  hasStreamErrorEvents: true,
});

describe('openai-compatible adapter wire format', () => {
  let fake: FakeVendorServer;
  const options = (overrides: Partial<VendorAdapterOptions> = {}): VendorAdapterOptions => ({
    vendor: 'groq',
    apiKey: API_KEY,
    baseURL: fake.baseURL,
    timeoutMs: 5_000,
    maxRetries: 0,
    ...overrides,
  });

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => fake.reset());

  it('calls chat completions with the bearer key, tools, settings and pass-through options', async () => {
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
    await createOpenAICompatibleProvider(options()).languageModel!.generateText({
      model: 'llama-3.3-70b-versatile',
      instructions: 'You are terse.',
      items: [{ type: 'message', role: 'user', text: 'Weather in Oslo?' }],
      tools: [WEATHER_TOOL],
      toolChoice: 'required',
      parallelToolCalls: false,
      temperature: 0.1,
      topP: 0.5,
      maxOutputTokens: 64,
      reasoningEffort: 'medium',
      verbosity: 'low',
    });
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent.body).toMatchObject({
      model: 'llama-3.3-70b-versatile',
      max_tokens: 64,
      temperature: 0.1,
      top_p: 0.5,
      parallel_tool_calls: false,
      reasoning_effort: 'medium',
      verbosity: 'low',
      tool_choice: 'required',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Oslo?' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather for a city.',
            parameters: WEATHER_TOOL.parameters,
          },
        },
      ],
    });
  });

  it('asks for usage in streams with stream_options.include_usage', async () => {
    fake.script({ textChunks: ['a', 'b'], usage: { inputTokens: 30, outputTokens: 2 } });
    const { parts } = await collect(
      createOpenAICompatibleProvider(options()).languageModel!.streamText({
        model: 'llama-3.3-70b-versatile',
        items: [{ type: 'message', role: 'user', text: 'hi' }],
      }),
    );
    expect(fake.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 30, outputTokens: 2 } });
  });

  it('round-trips a function call as assistant tool_calls and a tool message', async () => {
    fake.script(
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, callId: 'call_77' }] },
      { text: '3°C.' },
    );
    const model = createOpenAICompatibleProvider(options()).languageModel!;
    const first = await model.generateText({
      model: 'llama-3.3-70b-versatile',
      items: [{ type: 'message', role: 'user', text: 'Weather in Oslo?' }],
      tools: [WEATHER_TOOL],
    });
    expect(first.toolCalls).toEqual([{ callId: 'call_77', name: 'get_weather', arguments: '{"city":"Oslo"}' }]);
    await model.generateText({
      model: 'llama-3.3-70b-versatile',
      items: [
        { type: 'message', role: 'user', text: 'Weather in Oslo?' },
        { type: 'function_call', ...first.toolCalls[0]! },
        { type: 'function_call_output', callId: 'call_77', output: '3°C' },
      ],
      tools: [WEATHER_TOOL],
    });
    expect(fake.requests[1]!.body.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_77', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_77', content: '3°C' },
    ]);
  });

  it('sends no Authorization header when the vendor has no key', async () => {
    fake.script({ text: 'local' });
    await createOpenAICompatibleProvider(options({ apiKey: undefined })).languageModel!.generateText({
      model: 'local-model',
      items: [{ type: 'message', role: 'user', text: 'hi' }],
    });
    expect(fake.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('embeds through POST /v1/embeddings', async () => {
    fake.script({ embedding: [0.3, 0.4], usage: { inputTokens: 2, outputTokens: 0 } });
    const result = await createOpenAICompatibleProvider(options()).embeddingModel!.embed({
      model: 'nomic-embed-text',
      input: 'hi there',
    });
    expect(result).toEqual({ embedding: [0.3, 0.4], usage: { inputTokens: 2 } });
    expect(fake.requests[0]).toMatchObject({
      path: '/v1/embeddings',
      body: expect.objectContaining({ model: 'nomic-embed-text', input: ['hi there'] }),
    });
  });

  it('requires a base URL', () => {
    expect(() => createOpenAICompatibleProvider(options({ baseURL: undefined }))).toThrow(/base URL/);
  });
});
