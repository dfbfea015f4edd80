import OpenAI from 'openai';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { catalogWithVariant } from '../support/catalog-file';
import { TestApp, useTestApp, type TestSuite } from '../support/harness';

/**
 * Responses and Conversations on /openai/v1 through the official `openai` package: the same services as /v2,
 * OpenAI's defaults (a Response without `background` is synchronous) and OpenAI's error body.
 */
const client = (suite: TestSuite) =>
  new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });

describe('/openai/v1/responses with the OpenAI SDK', () => {
  const suite = useTestApp();

  it('create without background is synchronous, as on OpenAI; retrieve and delete', async () => {
    const response = await client(suite).responses.create({ model: 'dev-echo', input: 'synchronous by default' });
    expect(response).toMatchObject({ object: 'response', status: 'completed', background: false });
    expect(response.output_text).toBe('synchronous by default');
    expect((await client(suite).responses.retrieve(response.id)).output_text).toBe('synchronous by default');
    expect(await client(suite).responses.delete(response.id)).toMatchObject({ id: response.id, deleted: true });
    await expect(client(suite).responses.retrieve(response.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('responses.stream() with finalResponse(); a background Response cancelled', async () => {
    const stream = client(suite).responses.stream({ model: 'dev-echo', input: 'streamed on the compatible surface' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('streamed on the compatible surface');
    expect(deltas.join('')).toBe('streamed on the compatible surface');

    const queued = await client(suite).responses.create({
      model: 'dev-echo',
      input: '/delay 1000 /words 50',
      background: true,
    });
    expect(['queued', 'in_progress']).toContain(queued.status);
    const cancelled = await client(suite).responses.cancel(queued.id);
    expect(cancelled.status).toBe('cancelled');
  });

  it('retrieve with stream: true and starting_after resumes the stored events after that sequence number', async () => {
    const done = await client(suite).responses.create({ model: 'dev-echo', input: 'one two three' });
    const all = [];
    for await (const event of await client(suite).responses.retrieve(done.id, { stream: true })) all.push(event);
    expect(all[0]!.type).toBe('response.created');
    expect(all.at(-1)!.type).toBe('response.completed');
    const resumed = [];
    for await (const event of await client(suite).responses.retrieve(done.id, { stream: true, starting_after: 2 }))
      resumed.push(event);
    expect(resumed.map((event) => event.sequence_number)).toEqual(
      all.filter((event) => event.sequence_number > 2).map((event) => event.sequence_number),
    );
  });

  it('a stateless tool round trip: the output items sent back with the function output; input_items auto-paginates', async () => {
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
        strict: false,
      },
    ];
    const first = await client(suite).responses.create({
      model: 'dev-echo',
      input: [{ role: 'user', content: [{ type: 'input_text', text: '/call get_weather {"city":"Rome"}' }] }],
      tools,
    });
    const call = first.output.find((item) => item.type === 'function_call')!;
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Rome"}' });
    const second = await client(suite).responses.create({
      model: 'dev-echo',
      input: [
        { role: 'user', content: '/call get_weather {"city":"Rome"}' },
        ...(first.output as never[]),
        { type: 'function_call_output', call_id: (call as { call_id: string }).call_id, output: 'warm' },
      ],
      tools,
    });
    expect(second.output_text).toBe('Tool get_weather returned: warm');

    const items = [];
    for await (const item of client(suite).responses.inputItems.list(second.id, { limit: 1, order: 'asc' }))
      items.push(item);
    expect(items.map((item) => item.type)).toEqual(['message', 'function_call', 'function_call_output']);
    expect(items[0]).toMatchObject({
      role: 'user',
      content: [{ type: 'input_text', text: '/call get_weather {"city":"Rome"}' }],
    });
    const newestFirst = await client(suite).responses.inputItems.list(second.id);
    expect(newestFirst.data.map((item) => item.type)).toEqual(['function_call_output', 'function_call', 'message']);
  });

  it('background: true with stream: true streams a background Response, resumable with starting_after; /v2 keeps its 400', async () => {
    const words = Array.from({ length: 12 }, (_, index) => `w${index}`);
    const stream = await client(suite).responses.create({
      model: 'dev-echo',
      input: `/delay 40 ${words.join(' ')}`,
      background: true,
      stream: true,
    });
    const seen: Array<{ type: string; sequence_number: number; delta?: string }> = [];
    let id = '';
    for await (const event of stream) {
      seen.push(event as never);
      if (event.type === 'response.created') {
        expect(event.response).toMatchObject({ background: true, status: expect.stringMatching(/queued|in_progress/) });
        id = event.response.id;
      }
      // The client goes away after three words; the background Response goes on.
      if (seen.filter((entry) => entry.type === 'response.output_text.delta').length === 3) break;
    }
    const last = seen.at(-1)!.sequence_number;
    const rest = [];
    for await (const event of await client(suite).responses.retrieve(id, { stream: true, starting_after: last }))
      rest.push(event);
    expect(rest[0]!.sequence_number).toBe(last + 1);
    expect(rest.at(-1)).toMatchObject({
      type: 'response.completed',
      response: { background: true, status: 'completed' },
    });
    const deltas = [...seen, ...rest]
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => (event as { delta: string }).delta);
    expect(deltas.join('')).toBe(words.join(' '));
    expect((await client(suite).responses.retrieve(id)).output_text).toBe(words.join(' '));

    const v2 = await suite.app.request('POST', '/v2/responses', {
      key: suite.key,
      body: { model: 'dev-echo', input: 'x', stream: true, background: true },
    });
    expect([v2.status, v2.body.error]).toEqual([
      400,
      { code: 'response.invalid_request', message: 'stream: stream: true requires background: false' },
    ]);
  });

  it("errors in OpenAI's body: an unknown field, store: false", async () => {
    for (const extra of [{ prompt_cache_key: 'k' }, { store: false }]) {
      const reply = await suite.app.request('POST', '/openai/v1/responses', {
        key: suite.key,
        body: { model: 'dev-echo', input: 'x', ...extra },
      });
      expect(reply.status).toBe(400);
      expect(reply.body.error).toMatchObject({
        type: 'invalid_request_error',
        code: 'response.invalid_request',
        param: null,
      });
    }
  });
});

describe('/openai/v1/conversations with the OpenAI SDK', () => {
  const suite = useTestApp();

  it('create with items, a Response in it, items listed with auto-pagination, metadata update, delete', async () => {
    const conversation = await client(suite).conversations.create({
      items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'remember blue' }] }],
      metadata: { topic: 'colours' },
    });
    expect(conversation).toMatchObject({ object: 'conversation', metadata: { topic: 'colours' } });
    const response = await client(suite).responses.create({
      model: 'dev-echo',
      conversation: conversation.id,
      input: 'what colour',
    });
    expect(response.output_text).toBe('what colour');
    const texts: string[] = [];
    for await (const item of client(suite).conversations.items.list(conversation.id, { limit: 1, order: 'asc' })) {
      if (item.type === 'message')
        texts.push((item.content as Array<{ text: string }>).map((part) => part.text).join(''));
    }
    expect(texts).toEqual(['remember blue', 'what colour', 'what colour']);
    expect(
      (await client(suite).conversations.update(conversation.id, { metadata: { topic: 'paint' } })).metadata,
    ).toEqual({ topic: 'paint' });
    expect(await client(suite).conversations.delete(conversation.id)).toMatchObject({ deleted: true });
    await expect(client(suite).conversations.retrieve(conversation.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('structured output: text.format and response_format', () => {
  let fake: FakeVendorServer;
  let app: TestApp;
  let key: string;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    app = await TestApp.start({
      env: {
        OPENAI_API_KEY: 'sk-fake-openai-key',
        OPENAI_BASE_URL: fake.baseURL,
        CATALOG_PATH: catalogWithVariant('dev-echo', 'dev-echo-plain', { structured_outputs: false }),
      },
    });
    ({ key } = await app.createAccount());
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });
  const schema = {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
    required: ['city', 'days'],
    additionalProperties: false,
  };

  it('a json_schema text.format reaches OpenAI as its text.format, strict as sent; the Response shows it', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${app.baseUrl}/v2`, maxRetries: 0 });
    const response = await openai.responses.create({
      model: 'gpt-4.1-mini',
      input: 'a trip',
      background: false,
      text: { format: { type: 'json_schema', name: 'trip', schema, strict: true } },
    } as never);
    expect(response.status).toBe('completed');
    expect(fake.requests.at(-1)!.body).toMatchObject({
      text: { format: { type: 'json_schema', name: 'trip', strict: true, schema: { required: ['city', 'days'] } } },
    });
    expect((response as unknown as { text: unknown }).text).toEqual({
      format: { type: 'json_schema', name: 'trip', schema, strict: true },
    });
  });

  it('response_format json_schema on /openai/v1/chat/completions reaches the vendor; strict defaults to false as on OpenAI', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${app.baseUrl}/openai/v1`, maxRetries: 0 });
    await openai.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'a trip' }],
      response_format: { type: 'json_schema', json_schema: { name: 'trip', schema } },
    });
    expect(fake.requests.at(-1)!.body).toMatchObject({
      text: { format: { type: 'json_schema', name: 'trip', strict: false } },
    });
    await openai.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'any json' }],
      response_format: { type: 'json_object' },
    });
    expect(fake.requests.at(-1)!.body).toMatchObject({ text: { format: { type: 'json_object' } } });
  });

  it('dev-echo answers the smallest value of the schema (or the echoed JSON), so responses.parse() works offline', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${app.baseUrl}/openai/v1`, maxRetries: 0 });
    const parsed = await openai.responses.parse({
      model: 'dev-echo',
      input: 'plan a trip',
      text: { format: { type: 'json_schema', name: 'trip', schema, strict: true } },
    });
    expect(parsed.output_parsed).toEqual({ city: '', days: 1 });
    const echoed = await openai.responses.create({
      model: 'dev-echo',
      input: '{"city":"Oslo","days":3}',
      text: { format: { type: 'json_object' } },
    });
    expect(JSON.parse(echoed.output_text)).toEqual({ city: 'Oslo', days: 3 });
  });

  it('a model without structured outputs refuses it with a 400 naming the model, on both surfaces', async () => {
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo-plain', input: 'x', background: false, text: { format: { type: 'json_object' } } },
    });
    expect([reply.status, reply.body.error?.message]).toEqual([
      400,
      expect.stringMatching(/dev-echo-plain does not support structured output/),
    ]);
    const chat = await app.request('POST', '/openai/v1/chat/completions', {
      key,
      body: {
        model: 'dev-echo-plain',
        messages: [{ role: 'user', content: 'x' }],
        response_format: { type: 'json_object' },
      },
    });
    expect([chat.status, chat.body.error?.type]).toEqual([400, 'invalid_request_error']);
  });
});
