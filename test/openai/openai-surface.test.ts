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
    expect(await client().models.retrieve('dev-echo')).toEqual({ id: 'dev-echo', object: 'model', created: 0, owned_by: 'dev' });
    await expect(client().models.retrieve('no-such-model')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('embeddings.create() with the SDK defaults (base64 on the wire) and with an array input; billed per input', async () => {
    const direct = (await suite.app.request('POST', '/v2/embeddings', { key: suite.key, body: { model: 'dev-embed', input: 'the quick brown fox' } })).body.embedding as number[];
    const one = await client().embeddings.create({ model: 'dev-embed', input: 'the quick brown fox' });
    expect(one.object).toBe('list');
    expect(one.data).toHaveLength(1);
    one.data[0]!.embedding.forEach((value, index) => expect(value).toBeCloseTo(direct[index]!, 6));
    expect(one.usage.prompt_tokens).toBeGreaterThan(0);

    const before = (await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key })).body.transactions.length;
    const many = await client().embeddings.create({ model: 'dev-embed', input: ['one', 'two words', 'three more words'], encoding_format: 'float' });
    expect(many.data.map((item) => item.index)).toEqual([0, 1, 2]);
    expect(many.data[1]!.embedding).toHaveLength(direct.length);
    const after = (await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key })).body.transactions.length;
    expect(after - before).toBe(3);
  });

  it("errors come in OpenAI's body and as the SDK's typed errors", async () => {
    const raw = await suite.app.request('POST', '/openai/v1/embeddings', { key: suite.key, body: { model: 'dev-embed', input: [] } });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'embedding.invalid_request' } });
    await expect(client().embeddings.create({ model: 'dev-echo', input: 'x' })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const bad = new OpenAI({ apiKey: 'sk-proj-not-ours', baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });
    const error = await bad.models.list().then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).error).toMatchObject({ type: 'authentication_error', code: 'auth.unauthorized' });
  });
});
