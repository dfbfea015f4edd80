import OpenAI from 'openai';
import { useTestApp } from '../support/harness';

/** The OpenAI-compatible surface (/openai/v1) through the official `openai` package: models and embeddings. */
describe('/openai/v1 with the OpenAI SDK', () => {
  const suite = useTestApp();
  const client = () => new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });

  it('models.list() auto-paginates the catalog; models.retrieve() one model; an unknown one is a typed 404', async () => {
    const ids: string[] = [];
    for await (const model of client().models.list()) ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining(['dev-echo', 'dev-embed', 'gpt-4.1']));
    expect(await client().models.retrieve('dev-echo')).toEqual({
      id: 'dev-echo',
      object: 'model',
      created: 0,
      owned_by: 'dev',
    });
    await expect(client().models.retrieve('no-such-model')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('embeddings.create() with the SDK defaults (base64 on the wire) and with an array input; billed per input', async () => {
    const direct = (
      await suite.app.request('POST', '/v2/embeddings', {
        key: suite.key,
        body: { model: 'dev-embed', input: 'the quick brown fox' },
      })
    ).body.embedding as number[];
    const one = await client().embeddings.create({ model: 'dev-embed', input: 'the quick brown fox' });
    expect(one.object).toBe('list');
    expect(one.data).toHaveLength(1);
    one.data[0]!.embedding.forEach((value, index) => expect(value).toBeCloseTo(direct[index]!, 6));
    expect(one.usage.prompt_tokens).toBeGreaterThan(0);

    const before = (await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key })).body
      .transactions.length;
    const many = await client().embeddings.create({
      model: 'dev-embed',
      input: ['one', 'two words', 'three more words'],
      encoding_format: 'float',
    });
    expect(many.data.map((item) => item.index)).toEqual([0, 1, 2]);
    expect(many.data[1]!.embedding).toHaveLength(direct.length);
    const after = (await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key })).body
      .transactions.length;
    expect(after - before).toBe(3);
  });

  it("errors come in OpenAI's body and as the SDK's typed errors", async () => {
    const raw = await suite.app.request('POST', '/openai/v1/embeddings', {
      key: suite.key,
      body: { model: 'dev-embed', input: [] },
    });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({
      error: {
        message: expect.any(String),
        type: 'invalid_request_error',
        param: null,
        code: 'embedding.invalid_request',
      },
    });
    await expect(client().embeddings.create({ model: 'dev-echo', input: 'x' })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
    const bad = new OpenAI({ apiKey: 'sk-proj-not-ours', baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });
    const error = await bad.models.list().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).error).toMatchObject({
      type: 'authentication_error',
      code: 'auth.unauthorized',
    });
  });
});

describe('/openai/v1/chat/completions with the OpenAI SDK', () => {
  const suite = useTestApp();
  const client = () => new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });
  const weather = {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
      strict: false,
    },
  };

  it("a completion in OpenAI's shape, billed once", async () => {
    const completion = await client().chat.completions.create({
      model: 'dev-echo',
      messages: [
        { role: 'developer', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hello there' }] },
      ],
      max_completion_tokens: 50,
    });
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'dev-echo',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hello there' }, finish_reason: 'stop' }],
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
    const debits = (
      await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key })
    ).body.transactions.filter((row: any) => row.metadata.service === 'chat');
    expect(debits).toHaveLength(1);
  });

  it('a tool round trip: tool_calls, then the tool message answers it', async () => {
    const first = await client().chat.completions.create({
      model: 'dev-echo',
      messages: [{ role: 'user', content: '/call get_weather {"city":"Paris"}' }],
      tools: [weather],
      tool_choice: 'auto',
    });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]! as { id: string; function: { name: string; arguments: string } };
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    const second = await client().chat.completions.create({
      model: 'dev-echo',
      messages: [
        { role: 'user', content: '/call get_weather {"city":"Paris"}' },
        choice.message as never,
        { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      ],
      tools: [weather],
    });
    expect(second.choices[0]!.message.content).toBe('Tool get_weather returned: sunny');
  });

  it('refusals: n > 1, image content, unknown fields, each a typed 400', async () => {
    for (const body of [
      { n: 2 },
      {
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/x.png' } }] }],
      },
      { frequency_penalty: 0.5 },
    ]) {
      await expect(
        client().chat.completions.create({
          model: 'dev-echo',
          messages: [{ role: 'user', content: 'x' }],
          ...body,
        } as never),
      ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    }
    const raw = await suite.app.request('POST', '/openai/v1/chat/completions', {
      key: suite.key,
      body: { model: 'dev-echo', messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } },
    });
    expect(raw.status).toBe(400);
    expect(raw.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'chat.invalid_request',
      message: expect.stringMatching(/stream_options/),
    });
  });
});
