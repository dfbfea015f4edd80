import OpenAI from 'openai';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { TestApp, useTestApp } from '../support/harness';
import { createResponse, openCreateStream } from './helpers';

/**
 * A Response shows the values in effect, not null (spec: Responses create body defaults: temperature 1,
 * max_output_tokens the model's limit; api-decisions 16), on /v2 and /openai/v1, in every place a Response object is
 * shown; the temperature shown is the one the vendor is sent.
 */
describe('a Response shows the values in effect (dev-echo)', () => {
  const suite = useTestApp();
  let maxOutput: number;
  beforeAll(async () => {
    maxOutput = (await suite.app.request('GET', '/v2/models/dev-echo', { key: suite.key })).body.max_output;
    expect(maxOutput).toBeGreaterThan(0);
  });

  it('left open: temperature 1 (the default), max_output_tokens the model limit, top_p null (the vendor own)', async () => {
    const queued = await createResponse(suite.app, suite.key, { input: 'hello' });
    expect(queued.body).toMatchObject({ temperature: 1, top_p: null, max_output_tokens: maxOutput });
    const done = await createResponse(suite.app, suite.key, { input: 'hello', background: false });
    expect(done.body).toMatchObject({ status: 'completed', temperature: 1, top_p: null, max_output_tokens: maxOutput });
    const read = await suite.app.request('GET', `/v2/responses/${done.body.id}`, { key: suite.key });
    expect(read.body).toEqual(done.body);

    // The streamed lifecycle events carry the same object.
    const stream = await openCreateStream(suite.app, suite.key, { input: 'streamed' });
    const events = await stream.readAll();
    for (const event of [events[0]!, events.at(-1)!])
      expect(event.data.response).toMatchObject({ temperature: 1, top_p: null, max_output_tokens: maxOutput });
  });

  it("set: the request's values; an Assistant's temperature when the request has none", async () => {
    const set = await createResponse(suite.app, suite.key, {
      input: 'hello',
      background: false,
      temperature: 0.2,
      top_p: 0.5,
      max_output_tokens: 50,
    });
    expect(set.body).toMatchObject({ temperature: 0.2, top_p: 0.5, max_output_tokens: 50 });
    const zero = await createResponse(suite.app, suite.key, { input: 'hello', background: false, temperature: 0 });
    expect(zero.body.temperature).toBe(0);

    const assistant = await suite.app.request('POST', '/v2/assistants', {
      key: suite.key,
      body: { model: 'dev-echo', name: 'Cool', temperature: 0.3 },
    });
    const viaAssistant = await createResponse(suite.app, suite.key, {
      model: undefined,
      assistant_id: assistant.body.id,
      input: 'hello',
      background: false,
    });
    expect(viaAssistant.body).toMatchObject({ temperature: 0.3, max_output_tokens: maxOutput });
  });

  it('/openai/v1: the same values, as the OpenAI SDK reads them', async () => {
    const openai = new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/openai/v1` });
    const response = await openai.responses.create({ model: 'dev-echo', input: 'hello' });
    expect(response).toMatchObject({ temperature: 1, top_p: null, max_output_tokens: maxOutput });
    const set = await openai.responses.create({ model: 'dev-echo', input: 'hello', temperature: 0.7, top_p: 0.9 });
    expect(set).toMatchObject({ temperature: 0.7, top_p: 0.9 });
  });
});

describe('the temperature shown is the one sent (fake OpenAI)', () => {
  let fake: FakeVendorServer;
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    app = await TestApp.start({ env: { OPENAI_API_KEY: 'sk-openai-fake-test-key', OPENAI_BASE_URL: fake.baseURL } });
    ({ key } = await app.createAccount({ balance: 10_000_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  it('left open, 1 is sent with the model limit as the cap; a top_p alone is sent without a temperature', async () => {
    const model = (await app.request('GET', '/v2/models/gpt-4.1-mini', { key })).body;
    const open = await createResponse(app, key, { model: 'gpt-4.1-mini', input: 'hi', background: false });
    expect(open.body).toMatchObject({ status: 'completed', temperature: 1, max_output_tokens: model.max_output });
    expect(fake.requests[0]!.body).toMatchObject({ temperature: 1, max_output_tokens: model.max_output });
    expect(fake.requests[0]!.body.top_p).toBeUndefined();

    const nucleus = await createResponse(app, key, {
      model: 'gpt-4.1-mini',
      input: 'hi',
      background: false,
      top_p: 0.4,
    });
    expect(nucleus.body).toMatchObject({ status: 'completed', top_p: 0.4 });
    expect(fake.requests[1]!.body.top_p).toBe(0.4);
    expect(fake.requests[1]!.body.temperature).toBeUndefined();
  });
});
