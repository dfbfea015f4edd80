import { createActivities, type Activities } from '../../src/engine/job-kinds';
import { createEmbeddedEngine } from '../../src/engine/embedded-engine';
import type { Engine } from '../../src/engine/engine';
import { TestApp } from '../support/harness';

/**
 * A test app whose own engine is stopped, so that only an engine started by the test runs jobs: with
 * activities wrapped to fail or count, and fast retries and polling. One per describe block.
 */
export function useEngineUnderTest(options: { env?: () => Record<string, string> } = {}) {
  const state: { app?: TestApp; key?: string; engine?: Engine } = {};

  beforeAll(async () => {
    // The engine a test starts is embedded, whatever the suite runs on (it stops the app's own).
    state.app = await TestApp.start({ engine: 'embedded', env: options.env?.() });
    ({ key: state.key } = await state.app.createAccount());
    await state.app.runtime.deps.engine.stop();
  });
  afterEach(async () => {
    await state.engine?.stop();
    state.engine = undefined;
  });
  afterAll(() => state.app?.close());

  return {
    get app(): TestApp {
      return state.app!;
    },
    get key(): string {
      return state.key!;
    },
    /** Starts an engine over the real activities as changed by `wrap`. */
    async start(wrap: (real: Activities) => Activities, options: { recordDelayMs?: number } = {}): Promise<Engine> {
      const { db, bus, logger, events, webhooks, catalog, providers, ledger } = state.app!.runtime.deps;
      const activities = wrap(createActivities({ db, logger, events, webhooks, catalog, providers, ledger }));
      state.engine = createEmbeddedEngine({
        db,
        bus,
        logger,
        activities,
        concurrency: 4,
        exclusiveStorage: false,
        retryBaseMs: 5,
        pollIntervalMs: 50,
        ...options,
      });
      await state.engine.start();
      return state.engine;
    },
  };
}
