import { performance } from 'node:perf_hooks';
import { createCircuits, FAILURES_TO_OPEN } from '../../src/routing/circuits';
import type { FakeVendorServer } from '../fakes';
import type { TestApp } from '../support/harness';
import { useRouteSuite } from './route-catalog';

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
      const started = performance.now();
      const skipped = await ask();
      const elapsed = performance.now() - started;
      expect(skipped.body.model).toBe('claude-haiku-4-5');
      // Not called at all: no timeout to wait for (the whole request, Anthropic's answer included, within 50 ms here).
      expect(openai.requests).toHaveLength(FAILURES_TO_OPEN);
      expect(elapsed).toBeLessThan(200);

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
});
