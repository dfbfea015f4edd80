import OpenAI from 'openai';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { TestApp } from '../support/harness';

/**
 * A vendor's rate limit or timeout that outlasts the service's own retries: under /openai/v1 the status OpenAI
 * answers with (429, 503) and Retry-After, which OpenAI's SDK honours; under /v2 the spec's 500 in its envelope,
 * with Retry-After too. The vendor's own Retry-After is passed on when it sent one.
 */
describe('vendor rate limits and timeouts that outlast the retries', () => {
  let app: TestApp;
  let fake: FakeVendorServer;
  let key: string;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    app = await TestApp.start({
      env: { OPENAI_API_KEY: 'sk-fake-openai-key', OPENAI_BASE_URL: fake.baseURL, PROVIDER_MAX_RETRIES: '1' },
    });
    ({ key } = await app.createAccount());
  });
  afterAll(async () => {
    await app.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const chat = (path: string, content: string, model = 'dev-echo') =>
    app.request('POST', path, { key, body: { model, messages: [{ role: 'user', content }] } });

  it('/openai/v1: 429 rate_limit_error and 503 with Retry-After; /v2: 500 in the envelope with Retry-After', async () => {
    const limited = await chat('/openai/v1/chat/completions', '/error rate_limit');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('5');
    expect(limited.body.error).toMatchObject({
      type: 'rate_limit_error',
      code: 'chat.execution_failed',
      message: expect.stringContaining('rate limiting'),
    });
    const slow = await chat('/openai/v1/chat/completions', '/error timeout');
    expect(slow.status).toBe(503);
    expect(slow.headers.get('retry-after')).toBe('1');
    expect(slow.body.error).toMatchObject({ type: 'server_error', code: 'chat.execution_failed' });

    const v2 = await chat('/v2/chat/completions', '/error rate_limit');
    expect(v2.status).toBe(500);
    expect(v2.headers.get('retry-after')).toBe('5');
    expect(v2.body).toEqual({
      error: { code: 'chat.execution_failed', message: expect.stringContaining('rate limiting') },
    });
    // Other failures are unchanged: no Retry-After.
    const failed = await chat('/openai/v1/chat/completions', '/error server');
    expect([failed.status, failed.headers.get('retry-after')]).toEqual([500, null]);
  });

  it("the vendor's Retry-After is passed on; the OpenAI SDK raises RateLimitError", async () => {
    fake.script({ status: 429, retryAfter: '2' }, { status: 429, retryAfter: '2' });
    const openai = new OpenAI({ apiKey: key, baseURL: `${app.baseUrl}/openai/v1`, maxRetries: 0 });
    const error = await openai.embeddings
      .create({ model: 'text-embedding-3-small', input: 'x' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('2');
    expect(fake.requests).toHaveLength(2);
  });
});
