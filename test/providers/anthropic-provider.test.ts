import { startFakeAnthropic, type FakeVendorServer } from '../fakes';
import { createAnthropicProvider } from '../../src/providers/anthropic/anthropic-provider';
import type { VendorAdapterOptions } from '../../src/providers/provider';
import { WEATHER_TOOL, collect, describeAdapterContract, providerErrorOf } from './adapter-contract';

const API_KEY = 'sk-ant-api03-test-0123456789abcdefSECRET';

describeAdapterContract({
  vendor: 'anthropic',
  apiKey: API_KEY,
  startFake: () => startFakeAnthropic(),
  createProvider: createAnthropicProvider,
  model: 'claude-sonnet-4-5',
  sendsRequestId: true,
  hasStreamErrorEvents: true,
});

describe('anthropic adapter wire format', () => {
  let fake: FakeVendorServer;
  const options = (): VendorAdapterOptions => ({
    vendor: 'anthropic',
    apiKey: API_KEY,
    baseURL: fake.baseURL,
    timeoutMs: 5_000,
    maxRetries: 0,
  });

  beforeAll(async () => {
    fake = await startFakeAnthropic();
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => fake.reset());

  it('calls the Messages API with x-api-key, anthropic-version, system, tools and settings', async () => {
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
    await createAnthropicProvider(options()).languageModel!.generateText({
      model: 'claude-sonnet-4-5',
      instructions: 'You are terse.',
      items: [{ type: 'message', role: 'user', text: 'Weather in Oslo?' }],
      tools: [WEATHER_TOOL],
      toolChoice: 'required',
      parallelToolCalls: false,
      temperature: 0.2,
      maxOutputTokens: 300,
      reasoningEffort: 'minimal',
    });
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe(API_KEY);
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toMatchObject({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      temperature: 0.2,
      system: [{ type: 'text', text: 'You are terse.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Oslo?' }] }],
      tools: [
        { name: 'get_weather', description: 'Current weather for a city.', input_schema: WEATHER_TOOL.parameters },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      // Anthropic has no "minimal" effort: the lowest one is sent.
      output_config: { effort: 'low' },
    });
  });

  it('round-trips parallel function calls: one assistant tool_use turn, one user tool_result turn', async () => {
    fake.script(
      {
        text: 'Checking both.',
        toolCalls: [
          { name: 'get_weather', arguments: { city: 'Oslo' }, callId: 'toolu_01' },
          { name: 'get_weather', arguments: { city: 'Rome' }, callId: 'toolu_02' },
        ],
      },
      { text: 'Oslo 3°C, Rome 18°C.' },
    );
    const model = createAnthropicProvider(options()).languageModel!;
    const first = await model.generateText({
      model: 'claude-sonnet-4-5',
      items: [{ type: 'message', role: 'user', text: 'Weather in Oslo and Rome?' }],
      tools: [WEATHER_TOOL],
    });
    expect(first.text).toBe('Checking both.');
    expect(first.toolCalls).toEqual([
      { callId: 'toolu_01', name: 'get_weather', arguments: '{"city":"Oslo"}' },
      { callId: 'toolu_02', name: 'get_weather', arguments: '{"city":"Rome"}' },
    ]);

    await model.generateText({
      model: 'claude-sonnet-4-5',
      items: [
        { type: 'message', role: 'user', text: 'Weather in Oslo and Rome?' },
        { type: 'message', role: 'assistant', text: 'Checking both.' },
        ...first.toolCalls.map((call) => ({ type: 'function_call' as const, ...call })),
        { type: 'function_call_output', callId: 'toolu_01', output: '3°C' },
        { type: 'function_call_output', callId: 'toolu_02', output: '18°C' },
      ],
      tools: [WEATHER_TOOL],
    });
    const messages = fake.requests[1]!.body.messages;
    expect(messages).toHaveLength(3);
    expect(messages[1]).toMatchObject({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Checking both.' },
        { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Oslo' } },
        { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { city: 'Rome' } },
      ],
    });
    expect(messages[2]).toMatchObject({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_01', content: '3°C' },
        { type: 'tool_result', tool_use_id: 'toolu_02', content: '18°C' },
      ],
    });
  });

  it('streams tool input that arrives as input_json_delta pieces', async () => {
    fake.script({
      toolCalls: [{ name: 'get_weather', arguments: { city: 'Reykjavík', unit: 'c' }, callId: 'toolu_9' }],
    });
    const { parts } = await collect(
      createAnthropicProvider(options()).languageModel!.streamText({
        model: 'claude-sonnet-4-5',
        items: [{ type: 'message', role: 'user', text: 'Weather?' }],
        tools: [WEATHER_TOOL],
      }),
    );
    expect(parts).toEqual([
      { type: 'tool-call', callId: 'toolu_9', name: 'get_weather', arguments: '{"city":"Reykjavík","unit":"c"}' },
      { type: 'finish', finishReason: 'tool_calls', usage: { inputTokens: 12, outputTokens: 7 } },
    ]);
    expect(fake.requests[0]!.body.stream).toBe(true);
  });

  it('retries a 529 overloaded answer as a server error', async () => {
    fake.script({ status: 529 }, { text: 'back' });
    const model = createAnthropicProvider({ ...options(), maxRetries: 1 }).languageModel!;
    const result = await model.generateText({
      model: 'claude-sonnet-4-5',
      items: [{ type: 'message', role: 'user', text: 'hi' }],
    });
    expect(result.text).toBe('back');
    expect(fake.requests).toHaveLength(2);
  });

  it('rejects a function output that answers no call before sending anything', async () => {
    const error = await providerErrorOf(
      createAnthropicProvider(options()).languageModel!.generateText({
        model: 'claude-sonnet-4-5',
        items: [{ type: 'function_call_output', callId: 'toolu_missing', output: 'x' }],
      }),
    );
    expect(error.kind).toBe('bad_request');
    expect(fake.requests).toHaveLength(0);
  });
});
