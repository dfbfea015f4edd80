import { HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { z } from 'zod';
import { useTestApp, type TestSuite } from '../support/harness';

/** `@langchain/openai` pointed at /openai/v1, unmodified: chat (invoke, stream, tools), structured output and embeddings. */
describe('LangChain (@langchain/openai) on /openai/v1', () => {
  const suite = useTestApp();
  const configuration = (suite: TestSuite) => ({ baseURL: `${suite.app.baseUrl}/openai/v1` });
  const chat = (options: Record<string, unknown> = {}) =>
    new ChatOpenAI({
      model: 'dev-echo',
      apiKey: suite.key,
      configuration: configuration(suite),
      maxRetries: 0,
      ...options,
    });

  it('ChatOpenAI.invoke() answers, with usage metadata; billed once', async () => {
    const reply = await chat().invoke([new SystemMessage('be brief'), new HumanMessage('hello langchain')]);
    expect(reply.content).toBe('hello langchain');
    expect(reply.usage_metadata).toMatchObject({ input_tokens: 4, output_tokens: 2, total_tokens: 6 });
    const debits = (await suite.app.request('GET', '/v2/organization/transactions?limit=50', { key: suite.key })).body
      .transactions;
    expect(debits.filter((row: any) => row.metadata.service === 'chat')).toHaveLength(1);
  });

  it('ChatOpenAI.stream() yields the text in pieces, the usage on the last chunk', async () => {
    const pieces: string[] = [];
    let usage: unknown;
    for await (const chunk of await chat({ streamUsage: true }).stream('streamed through langchain today')) {
      pieces.push(String(chunk.content));
      usage = chunk.usage_metadata ?? usage;
    }
    expect(pieces.filter(Boolean).length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe('streamed through langchain today');
    expect(usage).toMatchObject({ output_tokens: 4 });
  });

  it('bindTools(): the model calls the tool with parsed arguments', async () => {
    const weather = tool(async ({ city }: { city: string }) => `sunny in ${city}`, {
      name: 'get_weather',
      description: 'Weather in a city',
      schema: z.object({ city: z.string() }),
    });
    const reply = await chat().bindTools([weather]).invoke('/call get_weather {"city":"Lima"}');
    expect(reply.tool_calls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'Lima' } })]);
  });

  it('withStructuredOutput() parses the JSON the model returns', async () => {
    const trip = z.object({ city: z.string(), days: z.number().int() });
    const result = await chat()
      .withStructuredOutput(trip, { name: 'trip', method: 'jsonSchema' })
      .invoke('{"city":"Kyoto","days":4}');
    expect(result).toEqual({ city: 'Kyoto', days: 4 });
  });

  describe.each<[string, { useResponsesApi?: boolean }]>([
    ['chat completions', {}],
    ['the Responses API', { useResponsesApi: true }],
  ])('ChatOpenAI on %s', (_surface, options) => {
    it('invoke and stream', async () => {
      const reply = await chat(options).invoke('hello langchain');
      expect(reply.content).toEqual(
        options.useResponsesApi
          ? [expect.objectContaining({ type: 'text', text: 'hello langchain' })]
          : 'hello langchain',
      );
      expect(reply.text).toBe('hello langchain');
      const pieces: string[] = [];
      for await (const chunk of await chat(options).stream('streamed through langchain today')) pieces.push(chunk.text);
      expect(pieces.filter(Boolean).length).toBeGreaterThan(1);
      expect(pieces.join('')).toBe('streamed through langchain today');
    });

    it("bindTools: the tool is called, its answer sent back (with the tool's name), the model answers", async () => {
      const weather = tool(async ({ city }: { city: string }) => `sunny in ${city}`, {
        name: 'get_weather',
        description: 'Weather in a city',
        schema: z.object({ city: z.string() }),
      });
      const model = chat(options).bindTools([weather]);
      const question = new HumanMessage('/call get_weather {"city":"Lima"}');
      const call = await model.invoke([question]);
      expect(call.tool_calls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'Lima' } })]);
      const answer: ToolMessage = await weather.invoke(call.tool_calls![0]!);
      expect(answer.name).toBe('get_weather');
      const reply = await model.invoke([question, call, answer]);
      expect(reply.text).toBe('Tool get_weather returned: sunny in Lima');
    });

    it('withStructuredOutput', async () => {
      const trip = z.object({ city: z.string(), days: z.number().int() });
      expect(
        await chat(options).withStructuredOutput(trip, { name: 'trip' }).invoke('{"city":"Kyoto","days":4}'),
      ).toEqual({ city: 'Kyoto', days: 4 });
    });
  });

  it('OpenAIEmbeddings: embedQuery and embedDocuments', async () => {
    const embeddings = new OpenAIEmbeddings({
      model: 'dev-embed',
      apiKey: suite.key,
      configuration: configuration(suite),
      maxRetries: 0,
    });
    const query = await embeddings.embedQuery('the quick brown fox');
    expect(query).toHaveLength(256);
    const documents = await embeddings.embedDocuments(['the quick brown fox', 'a lazy dog']);
    expect(documents).toHaveLength(2);
    documents[0]!.forEach((value, index) => expect(value).toBeCloseTo(query[index]!, 6));
  });
});
