import { performance } from 'node:perf_hooks';
import type { FakeVendorServer } from '../fakes';
import { temporalAddress, type TestApp } from '../support/harness';
import { circuitsOf } from '../../src/routing/circuits';
import { useRouteSuite } from './route-catalog';

/** On Temporal (its dev server on a shared machine) a smaller batch, so the four fit in the test's time. */
const BATCH = temporalAddress ? 20 : 60;

/**
 * One vendor down under load (issue 36): BATCH concurrent Responses through a fallback route while the first vendor
 * refuses connections, then while it hangs (a 5 s timeout: the last target must answer within it under this load). None fails; the failover's added latency is measured
 * against the same load on a healthy first vendor (figures printed with ROUTE_FIGURES=1).
 */
describe('a route under load with its first vendor down', () => {
  const suite = useRouteSuite({ PROVIDER_TIMEOUT_MS: '5000' });
  let app: TestApp;
  let openai: FakeVendorServer;
  let key: string;
  beforeAll(async () => {
    // Sixty Responses in flight each hold their worst case.
    ({ key } = await suite.app.createAccount({ balance: 100_000_000 }));
  });
  beforeEach(() => ({ app, openai } = suite));
  afterEach(() => openai.setDefault({}));

  /** BATCH synchronous Responses at once: their models, failures and median latency. */
  async function load() {
    const results = await Promise.all(
      Array.from({ length: BATCH }, async () => {
        const started = performance.now();
        const reply = await app.request('POST', '/v2/responses', {
          key,
          body: { model: 'pair', input: 'hello', background: false },
        });
        return { ms: performance.now() - started, status: reply.body.status, model: reply.body.model };
      }),
    );
    const ms = results.map((result) => result.ms).sort((a, b) => a - b);
    return {
      failed: results.filter((result) => result.status !== 'completed').length,
      models: [...new Set(results.map((result) => result.model))],
      medianMs: ms[Math.floor(ms.length / 2)],
      maxMs: ms.at(-1)!,
    };
  }

  it('loses no Response when the vendor refuses, then hangs; its circuit ends the waiting', async () => {
    // Four batches, one of them waiting out the vendor's timeout.
    const healthy = await load();
    expect(healthy).toMatchObject({ failed: 0, models: ['gpt-5-mini'] });

    openai.setDefault({ resetConnection: true });
    const refusing = await load();
    expect(refusing).toMatchObject({ failed: 0, models: ['claude-haiku-4-5'] });

    // The refusals opened OpenAI's circuit; closed again here, the hanging vendor is waited for (its timeout) until
    // its circuit opens again.
    circuitsOf(app.runtime.deps.providers).success('openai');
    openai.setDefault({ hang: true });
    const before = openai.requests.length;
    const hanging = await load();
    // Every Response of the batch was in flight before the first timeout: each waited for it once (under heavy load a
    // few more calls than Responses have been seen; not explained yet).
    expect(openai.requests.length - before).toBeGreaterThanOrEqual(BATCH);
    expect(hanging).toMatchObject({ failed: 0, models: ['claude-haiku-4-5'] });
    const waitedFor = openai.requests.length;
    const skipped = await load();
    expect(skipped).toMatchObject({ failed: 0, models: ['claude-haiku-4-5'] });
    // Its circuit open, the hanging vendor is not called, so not waited for.
    expect(openai.requests.length).toBe(waitedFor);

    if (process.env.ROUTE_FIGURES)
      console.log(JSON.stringify({ healthy, refusing, hanging, hangingAfterCircuitOpened: skipped }, null, 1));
  }, 180_000);
});
