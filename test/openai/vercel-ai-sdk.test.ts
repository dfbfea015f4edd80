import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, embed, embedMany, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { useTestApp, type TestSuite } from '../support/harness';

/**
 * The Vercel AI SDK (`ai` 6 with `@ai-sdk/openai` 3) pointed at /openai/v1, unmodified but for `baseURL` and
 * `apiKey`: its default Responses model (`openai(id)`) and its chat model (`openai.chat(id)`).
 */
const provider = (suite: TestSuite) => createOpenAI({ baseURL: `${suite.app.baseUrl}/openai/v1`, apiKey: suite.key });

const weather = tool({
  description: 'Weather in a city',
  inputSchema: jsonSchema<{ city: string }>({
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  }),
  execute: async ({ city }) => `sunny in ${city}`,
});

describe('Vercel AI SDK on /openai/v1', () => {
  const suite = useTestApp();
  const models = {
    responses: (id: string) => provider(suite)(id),
    chat: (id: string) => provider(suite).chat(id),
  };

  describe.each(Object.keys(models) as Array<keyof typeof models>)('%s model', (kind) => {
    const model = (id: string) => models[kind](id);

    it('generateText answers, with the usage', async () => {
      const result = await generateText({ model: model('dev-echo'), prompt: 'hello from the ai sdk', maxRetries: 0 });
      expect(result.text).toBe('hello from the ai sdk');
      expect(result.finishReason).toBe('stop');
      expect(result.usage).toMatchObject({ inputTokens: 5, outputTokens: 5, totalTokens: 10 });
    });

    it('streamText streams the text in pieces and ends with the usage', async () => {
      const result = streamText({ model: model('dev-echo'), prompt: 'one two three four', maxRetries: 0 });
      const pieces: string[] = [];
      for await (const piece of result.textStream) pieces.push(piece);
      expect(pieces.length).toBeGreaterThan(1);
      expect(pieces.join('')).toBe('one two three four');
      expect(await result.usage).toMatchObject({ outputTokens: 4 });
    });

    it('a two-step tool loop: the tool is called, its answer sent back, the model answers', async () => {
      const result = await generateText({
        model: model('dev-echo'),
        prompt: '/call weather {"city":"Lima"}',
        tools: { weather },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
      });
      expect(result.steps).toHaveLength(2);
      expect(result.steps[0]!.toolCalls).toEqual([
        expect.objectContaining({ toolName: 'weather', input: { city: 'Lima' } }),
      ]);
      expect(result.steps[0]!.toolResults).toEqual([expect.objectContaining({ output: 'sunny in Lima' })]);
      expect(result.text).toBe('Tool weather returned: sunny in Lima');
    });
  });

  it('embed and embedMany', async () => {
    const { embedding } = await embed({
      model: provider(suite).embedding('dev-embed'),
      value: 'the quick brown fox',
      maxRetries: 0,
    });
    expect(embedding).toHaveLength(256);
    const { embeddings } = await embedMany({
      model: provider(suite).embedding('dev-embed'),
      values: ['the quick brown fox', 'a lazy dog'],
      maxRetries: 0,
    });
    expect(embeddings).toHaveLength(2);
    embeddings[0]!.forEach((value, index) => expect(value).toBeCloseTo(embedding[index]!, 6));
  });
});

/**
 * A Response that fails reaches the SDK's user as our message. The SDK parses a Response with a schema that requires
 * `error.type` (a string) beside `message` and `code`; without it generateText on the Responses model threw
 * "Invalid JSON response" and our reason was lost. HTTP errors have OpenAI's `{error: {message, type, param, code}}`.
 */
describe('Vercel AI SDK on /openai/v1: failures surface our message', () => {
  let fake: FakeVendorServer;
  const vendorMessage = 'The prompt was refused by the vendor.';
  const ourMessage = `Vendor openai rejected the request as invalid (400): openai answered HTTP 400: ${vendorMessage}`;
  // The OpenAI vendor of the app is the fake, started first (the app's settings are read when it starts).
  const env: Record<string, string> = {};
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    Object.assign(env, { OPENAI_API_KEY: 'sk-openai-fake-test-key', OPENAI_BASE_URL: fake.baseURL });
  });
  const suite = useTestApp({ app: { env } });
  afterAll(() => fake?.close());

  /** What the SDK threw (or reported to onError), with its parts. */
  async function failureOf(run: () => Promise<unknown>): Promise<APICallError> {
    const error = await run().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(APICallError.isInstance(error)).toBe(true);
    return error as APICallError;
  }

  it('generateText on the Responses model: a Response the vendor refused (400, not retried)', async () => {
    fake.reset();
    fake.script({ status: 400, errorMessage: vendorMessage });
    const error = await failureOf(() =>
      generateText({ model: provider(suite)('gpt-4.1-mini'), prompt: 'hi', maxRetries: 0 }),
    );
    expect(error.message).toBe(ourMessage);
    expect(error.isRetryable).toBe(false);
    // The SDK keeps the Response it parsed (an object, whatever the field's type says).
    const failed = error.responseBody as unknown;
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'response.invalid_request', message: ourMessage, type: 'invalid_request_error', param: null },
    });
    expect(fake.requests).toHaveLength(1);
  });

  it('generateText on the Responses model: a Response whose vendor failed (dev-echo /error)', async () => {
    const error = await failureOf(() =>
      generateText({ model: provider(suite)('dev-echo'), prompt: '/error', maxRetries: 0 }),
    );
    expect(error.message).toBe('Vendor dev failed to process the request.');
    expect((error.responseBody as unknown as { error: unknown }).error).toEqual({
      code: 'response.execution_failed',
      message: 'Vendor dev failed to process the request.',
      type: 'server_error',
      param: null,
    });
  });

  it('streamText on the Responses model reports the failed Response with our message', async () => {
    fake.reset();
    fake.script({ status: 400, errorMessage: vendorMessage });
    const errors: unknown[] = [];
    const result = streamText({
      model: provider(suite)('gpt-4.1-mini'),
      prompt: 'hi',
      maxRetries: 0,
      onError: ({ error }) => void errors.push(error),
    });
    await result.consumeStream();
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe(ourMessage);
  });

  it("the chat model: the HTTP error in OpenAI's body, our message and code", async () => {
    fake.reset();
    fake.script({ status: 400, errorMessage: vendorMessage });
    const error = await failureOf(() =>
      generateText({ model: provider(suite).chat('gpt-4.1-mini'), prompt: 'hi', maxRetries: 0 }),
    );
    expect(error.statusCode).toBe(400);
    expect(error.message).toContain(vendorMessage);
    expect(error.data).toEqual({
      error: { message: error.message, type: 'invalid_request_error', param: null, code: 'chat.invalid_request' },
    });
  });

  it.each(['responses', 'chat'] as const)(
    'an HTTP error of ours (an unknown model) on the %s model: our message and code, not a parse error',
    async (kind) => {
      const openai = provider(suite);
      const error = await failureOf(() =>
        generateText({
          model: kind === 'chat' ? openai.chat('no-such-model') : openai('no-such-model'),
          prompt: 'hi',
          maxRetries: 0,
        }),
      );
      expect(error.message).toContain('no-such-model');
      expect(error.statusCode).toBe(400);
      expect(error.data).toEqual({
        error: {
          message: error.message,
          type: 'invalid_request_error',
          param: null,
          code: kind === 'chat' ? 'chat.invalid_request' : 'response.invalid_request',
        },
      });
    },
  );
});
