import { performance } from 'node:perf_hooks';
import { createCircuits, FAILURES_TO_OPEN } from '../../src/routing/circuits';
import type { FakeVendorServer } from '../fakes';
import type { TestApp } from '../support/harness';
import { useRouteSuite } from './route-catalog';

/** Awaits `call`, and how long it took. */
async function timed<T>(call: () => Promise<T>): Promise<{ reply: T; ms: number }> {
  const started = performance.now();
  const reply = await call();
  return { reply, ms: performance.now() - started };
}

/** The open-circuit gauge as /metrics shows it. */
async function openCircuits(app: TestApp): Promise<string> {
  return (await app.admin('GET', '/metrics')).body;
}

describe('circuits of routes', () => {
  it('open after consecutive failures, let one call through after the cool-down, close on its success', () => {
    let clock = 0;
    const circuits = createCircuits({ failuresToOpen: 3, coolDownMs: 1000, now: () => clock });
    circuits.failure('openai');
    circuits.failure('openai');
    circuits.success('openai');
    circuits.failure('openai');
    circuits.failure('openai');
    expect(circuits.isOpen('openai')).toBe(false);
    circuits.failure('openai');
    expect(circuits.isOpen('openai')).toBe(true);
    expect(circuits.open()).toEqual(['openai']);
    clock = 1000;
    expect(circuits.isOpen('openai')).toBe(false);
    // The trial call fails: open again at once.
    circuits.failure('openai');
    expect(circuits.isOpen('openai')).toBe(true);
    clock = 2000;
    circuits.success('openai');
    expect(circuits.isOpen('openai')).toBe(false);
  });

  describe('a vendor that hangs', () => {
    const suite = useRouteSuite({ PROVIDER_TIMEOUT_MS: '400' });
    let app: TestApp;
    let openai: FakeVendorServer;
    let anthropic: FakeVendorServer;
    let key: string;
    beforeEach(() => ({ app, openai, anthropic, key } = suite));
    afterEach(() => openai.setDefault({}));

    const ask = () =>
      app.request('POST', '/openai/v1/chat/completions', {
        key,
        body: { model: 'pair', messages: [{ role: 'user', content: 'hello' }] },
      });

    it('is waited for until its circuit opens, then skipped at once, by chat and by Responses', async () => {
      openai.setDefault({ hang: true });
      for (let call = 0; call < FAILURES_TO_OPEN; call += 1) {
        const started = performance.now();
        expect((await ask()).body.model).toBe('claude-haiku-4-5');
        expect(performance.now() - started).toBeGreaterThanOrEqual(400);
      }
      expect(openai.requests).toHaveLength(FAILURES_TO_OPEN);
      expect(await openCircuits(app)).toMatch(/switchyard_route_open_circuits\{vendor="openai"\} 1/);
      // The same request straight to the target that serves it, then through the route with the circuit open.
      const direct = await timed(() =>
        app.request('POST', '/openai/v1/chat/completions', {
          key,
          body: { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'hello' }] },
        }),
      );
      const skipped = await timed(ask);
      expect(skipped.reply.body.model).toBe('claude-haiku-4-5');
      // Not called at all: no timeout to wait for; the skip adds under 50 ms to the serving target's own time.
      expect(openai.requests).toHaveLength(FAILURES_TO_OPEN);
      expect(skipped.ms - direct.ms).toBeLessThan(50);

      const response = await app.request('POST', '/v2/responses', {
        key,
        body: { model: 'pair', input: 'hello', background: false },
      });
      expect(response.body).toMatchObject({ status: 'completed', model: 'claude-haiku-4-5' });
      expect(openai.requests).toHaveLength(FAILURES_TO_OPEN);
      const metrics = await app.runtime.deps.metrics.registry.getSingleMetricAsString(
        'switchyard_route_failovers_total',
      );
      expect(metrics).toMatch(/reason="circuit_open"/);
      expect(anthropic.requests.length).toBeGreaterThan(FAILURES_TO_OPEN);
    });
  });

  describe('with its threshold and cool-down set (ROUTE_CIRCUIT_FAILURES, ROUTE_CIRCUIT_COOL_DOWN_MS)', () => {
    const suite = useRouteSuite({ ROUTE_CIRCUIT_FAILURES: '1', ROUTE_CIRCUIT_COOL_DOWN_MS: '500' });
    afterEach(() => suite.openai.setDefault({}));

    it('opens after one failure, and lets a trial call through after the cool-down', async () => {
      const ask = () =>
        suite.app.request('POST', '/v2/chat/completions', {
          key: suite.key,
          body: { model: 'pair', messages: [{ role: 'user', content: 'hello' }] },
        });
      suite.openai.setDefault({ status: 503 });
      expect((await ask()).body.model).toBe('claude-haiku-4-5');
      expect(suite.openai.requests).toHaveLength(1);
      expect(await openCircuits(suite.app)).toMatch(/switchyard_route_open_circuits\{vendor="openai"\} 1/);
      expect((await ask()).body.model).toBe('claude-haiku-4-5');
      expect(suite.openai.requests).toHaveLength(1);
      // The cool-down is a duration on the clock: nothing to await but its end.
      await new Promise((resolve) => setTimeout(resolve, 600));
      suite.openai.setDefault({});
      expect((await ask()).body.model).toBe('gpt-5-mini');
      expect(suite.openai.requests).toHaveLength(2);
      expect(await openCircuits(suite.app)).not.toMatch(/switchyard_route_open_circuits\{vendor=/);
    });
  });
});
