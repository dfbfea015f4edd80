import { startFakeGemini, type FakeVendorServer } from '../fakes';
import { createGoogleProvider } from '../../src/providers/google/google-provider';
import type { VendorAdapterOptions } from '../../src/providers/provider';
import { WEATHER_TOOL, collect, describeAdapterContract } from './adapter-contract';

const API_KEY = 'AIzaSyTest-0123456789abcdefSECRET';

describeAdapterContract({
  vendor: 'google',
  apiKey: API_KEY,
  startFake: () => startFakeGemini(),
  createProvider: createGoogleProvider,
  model: 'gemini-2.5-flash',
  embeddingModel: 'gemini-embedding-001',
  sendsRequestId: false,
  hasStreamErrorEvents: false,
});

describe('google adapter wire format', () => {
  let fake: FakeVendorServer;
  const options = (): VendorAdapterOptions => ({
    vendor: 'google',
    apiKey: API_KEY,
    baseURL: fake.baseURL,
    timeoutMs: 5_000,
    maxRetries: 0,
  });

  beforeAll(async () => {
    fake = await startFakeGemini();
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => fake.reset());

  it('calls generateContent with x-goog-api-key, systemInstruction, tools, tool config and settings', async () => {
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
    await createGoogleProvider(options()).languageModel!.generateText({
      model: 'gemini-3-flash-preview',
      instructions: 'You are terse.',
      items: [{ type: 'message', role: 'user', text: 'Weather in Oslo?' }],
      tools: [WEATHER_TOOL],
      toolChoice: { type: 'function', name: 'get_weather' },
      temperature: 0.4,
      topP: 0.8,
      maxOutputTokens: 128,
      reasoningEffort: 'high',
    });
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/v1beta/models/gemini-3-flash-preview:generateContent');
    expect(sent.headers['x-goog-api-key']).toBe(API_KEY);
    expect(sent.query).toEqual({});
    expect(sent.body).toMatchObject({
      systemInstruction: { parts: [{ text: 'You are terse.' }] },
      contents: [{ role: 'user', parts: [{ text: 'Weather in Oslo?' }] }],
      generationConfig: {
        temperature: 0.4,
        topP: 0.8,
        maxOutputTokens: 128,
        thinkingConfig: { thinkingLevel: 'high' },
      },
      tools: [
        {
          functionDeclarations: [
            expect.objectContaining({ name: 'get_weather', description: 'Current weather for a city.' }),
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    });
  });

  it('round-trips a function call as functionCall / functionResponse parts, pairing the name by call id', async () => {
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }, { text: 'It is 3°C.' });
    const model = createGoogleProvider(options()).languageModel!;
    const first = await model.generateText({
      model: 'gemini-2.5-flash',
      items: [{ type: 'message', role: 'user', text: 'Weather in Oslo?' }],
      tools: [WEATHER_TOOL],
    });
    // Gemini gives calls no id: the SDK makes one up, and the output item refers to it.
    const call = first.toolCalls[0]!;
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
    expect(call.callId.length).toBeGreaterThan(0);

    const second = await model.generateText({
      model: 'gemini-2.5-flash',
      items: [
        { type: 'message', role: 'user', text: 'Weather in Oslo?' },
        { type: 'function_call', ...call },
        { type: 'function_call_output', callId: call.callId, output: '3°C' },
      ],
      tools: [WEATHER_TOOL],
    });
    expect(second.text).toBe('It is 3°C.');
    const contents = fake.requests[1]!.body.contents;
    expect(contents[1]).toMatchObject({
      role: 'model',
      parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }],
    });
    expect(contents[2]).toMatchObject({
      role: 'user',
      parts: [{ functionResponse: { name: 'get_weather', response: { name: 'get_weather', content: '3°C' } } }],
    });
  });

  it('streams from streamGenerateContent?alt=sse', async () => {
    fake.script({ textChunks: ['Guten', ' Tag'], usage: { inputTokens: 3, outputTokens: 2 } });
    const { parts } = await collect(
      createGoogleProvider(options()).languageModel!.streamText({
        model: 'gemini-2.5-flash',
        items: [{ type: 'message', role: 'user', text: 'Greet me in German.' }],
      }),
    );
    expect(parts).toEqual([
      { type: 'text-delta', text: 'Guten' },
      { type: 'text-delta', text: ' Tag' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 3, outputTokens: 2 } },
    ]);
    expect(fake.requests[0]).toMatchObject({
      path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent',
      query: { alt: 'sse' },
    });
  });

  it('maps a SAFETY finish to content_filter', async () => {
    fake.script({ text: '', finishReason: 'content_filter' });
    const result = await createGoogleProvider(options()).languageModel!.generateText({
      model: 'gemini-2.5-flash',
      items: [{ type: 'message', role: 'user', text: 'something blocked' }],
    });
    expect(result.finishReason).toBe('content_filter');
  });

  it('embeds through :embedContent', async () => {
    fake.script({ embedding: [0.1, 0.2, 0.3] });
    const result = await createGoogleProvider(options()).embeddingModel!.embed({
      model: 'gemini-embedding-001',
      input: 'hello',
    });
    expect(result).toEqual({ embedding: [0.1, 0.2, 0.3], usage: { inputTokens: 0 } });
    expect(fake.requests[0]).toMatchObject({
      path: '/v1beta/models/gemini-embedding-001:embedContent',
      headers: expect.objectContaining({ 'x-goog-api-key': API_KEY }),
      body: expect.objectContaining({ content: { parts: [{ text: 'hello' }] } }),
    });
  });
});
