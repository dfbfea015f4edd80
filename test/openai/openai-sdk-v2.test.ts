import OpenAI from 'openai';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { TestApp, useTestApp } from '../support/harness';

/**
 * The official `openai` package, unmodified, pointed at /v2 with the API key as its own `Authorization:
 * Bearer` (issue 16, first part: what works on /v2 today without any workaround).
 */
describe('the OpenAI SDK on /v2', () => {
  const suite = useTestApp();
  const client = () => new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/v2`, maxRetries: 0 });

  it('responses.create (synchronous) and retrieve, with the key as Authorization: Bearer', async () => {
    const response = await client().responses.create({
      model: 'dev-echo',
      input: 'hello from the sdk',
      background: false,
    } as never);
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('hello from the sdk');
    const again = await client().responses.retrieve(response.id);
    expect(again.id).toBe(response.id);
  });

  it('responses.stream(): events in order and finalResponse() with the text', async () => {
    const stream = client().responses.stream({
      model: 'dev-echo',
      input: 'streamed through the helper',
      background: false,
    } as never);
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('streamed through the helper');
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
  });

  it("a wrong key is the SDK's typed AuthenticationError", async () => {
    const bad = new OpenAI({ apiKey: 'sk-proj-not-ours', baseURL: `${suite.app.baseUrl}/v2`, maxRetries: 0 });
    await expect(bad.responses.retrieve('resp_x')).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe("OpenAI's field spellings on /v2/responses", () => {
  let fake: FakeVendorServer;
  let app: TestApp;
  let key: string;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    app = await TestApp.start({ env: { OPENAI_API_KEY: 'sk-fake-openai-key', OPENAI_BASE_URL: fake.baseURL } });
    ({ key } = await app.createAccount());
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  it('reasoning.effort and text.verbosity reach the vendor as reasoning_effort and verbosity; store, include, user, stream_options are accepted', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${app.baseUrl}/v2`, maxRetries: 0 });
    const response = await client.responses.create({
      // o4-mini: the AI SDK sends a reasoning effort only to reasoning models.
      model: 'o4-mini',
      input: 'hi',
      background: false,
      reasoning: { effort: 'low' },
      text: { verbosity: 'low', format: { type: 'text' } },
      store: true,
      include: ['reasoning.encrypted_content'],
      user: 'user-42',
    } as never);
    expect(response.status).toBe('completed');
    expect(fake.requests.at(-1)!.body).toMatchObject({ reasoning: { effort: 'low' }, text: { verbosity: 'low' } });

    const stream = client.responses.stream({
      model: 'gpt-4.1-mini',
      input: 'hi',
      background: false,
      stream_options: { include_obfuscation: false },
    } as never);
    expect((await stream.finalResponse()).status).toBe('completed');
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['store: false', { store: false }, /store: false is not supported/],
    [
      'an unknown text.format type',
      { text: { format: { type: 'xml' } } },
      /text.format.type must be text, json_object or json_schema/,
    ],
    [
      'a json_schema text.format without its schema',
      { text: { format: { type: 'json_schema', name: 'x' } } },
      /text.format.schema/,
    ],
    [
      'reasoning.effort that disagrees with reasoning_effort',
      { reasoning: { effort: 'low' }, reasoning_effort: 'high' },
      /disagree/,
    ],
    ['an unknown include value', { include: ['everything'] }, /include/],
    [
      'stream_options without stream',
      { stream_options: { include_obfuscation: false } },
      /stream_options is only allowed with stream: true/,
    ],
    ['a field OpenAI has and this service does not', { prompt_cache_key: 'k' }, /prompt_cache_key/],
  ])('400 response.invalid_request for %s, naming it', async (_case, extra, message) => {
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: 'hi', background: false, ...extra },
    });
    expect([reply.status, reply.body.error?.code]).toEqual([400, 'response.invalid_request']);
    expect(reply.body.error.message).toMatch(message);
  });
});
