import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { presentedKey } from '../fakes/fake-vendor-server';
import { TestApp } from '../support/harness';

/** Several keys per vendor (api-decisions 32): taken in turn; one refused or rate limited cools down. */
describe('a vendor with several keys', () => {
  let app: TestApp;
  let openai: FakeVendorServer;
  let key: string;
  beforeAll(async () => {
    openai = await startFakeOpenAI();
    app = await TestApp.start({
      env: { OPENAI_API_KEY: 'sk-first-key, sk-second-key', OPENAI_BASE_URL: openai.baseURL },
    });
    ({ key } = await app.createAccount({ balance: 100_000 }));
  });
  afterAll(async () => {
    await app.close();
    await openai.close();
  });

  const ask = () =>
    app.request('POST', '/openai/v1/chat/completions', {
      key,
      body: { model: 'gpt-5-mini', messages: [{ role: 'user', content: 'hello' }] },
    });
  const keysUsed = () => openai.requests.map(presentedKey);

  it('spreads calls over the keys, moves on at once from a rate-limited or refused key and cools it down', async () => {
    for (let call = 0; call < 4; call += 1) expect((await ask()).status).toBe(200);
    expect(keysUsed()).toEqual(['sk-first-key', 'sk-second-key', 'sk-first-key', 'sk-second-key']);

    openai.reset();
    // The first key's turn: rate limited (a long Retry-After is not waited for), the second answers at once.
    openai.script({ status: 429, retryAfter: '20' });
    expect((await ask()).status).toBe(200);
    expect(keysUsed()).toEqual(['sk-first-key', 'sk-second-key']);
    // The first key cools down: every call goes to the second.
    expect((await ask()).status).toBe(200);
    expect((await ask()).status).toBe(200);
    expect(keysUsed()).toEqual(['sk-first-key', 'sk-second-key', 'sk-second-key', 'sk-second-key']);

    openai.reset();
    // The second key refused (401) while the first cools: both cooling, the first to cool off (the first) is tried.
    openai.script({ status: 401 });
    const refused = await ask();
    expect(refused.status).toBe(500);
    expect(keysUsed()).toEqual(['sk-second-key']);
    expect((await ask()).status).toBe(200);
    expect(keysUsed()).toEqual(['sk-second-key', 'sk-first-key']);

    const metrics = await app.runtime.deps.metrics.registry.getSingleMetricAsString(
      'switchyard_vendor_keyed_calls_total',
    );
    expect(metrics).toMatch(/vendor="openai",key="#1",outcome="rate_limit"/);
    expect(metrics).toMatch(/vendor="openai",key="#2",outcome="auth"/);
    expect(metrics).not.toContain('sk-');
  });
});
