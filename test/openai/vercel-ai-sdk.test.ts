import { createOpenAI } from '@ai-sdk/openai';
import { embed, embedMany, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
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
