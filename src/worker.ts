import { createActivities } from '../activities';
import { runTemporalWorker } from './engine/temporal-engine';
import type { Runtime } from './runtime';

export interface RunningWorker {
  /** Resolves when the worker has stopped; rejects when it failed. */
  readonly running: Promise<void>;
  /** Stops polling at once; resolves when running activities finished or their grace ran out, and the connection closed. */
  stop(): Promise<void>;
}

/**
 * A Temporal worker over this runtime's activities (`npm run worker`, `all` with TEMPORAL_ADDRESS, and the tests'
 * apps and worker processes): the workflow bundle `npm run build` wrote unless `workflowBundlePath` names another.
 */
export async function startTemporalWorker(runtime: Runtime, options: { workflowBundlePath?: string; shutdownGraceMs?: number } = {}): Promise<RunningWorker> {
  const { config, db, logger, metrics, events, webhooks, catalog, providers, ledger, mcpSessions } = runtime.deps;
  if (!config.engine.temporal) throw new Error('A Temporal worker needs TEMPORAL_ADDRESS (the embedded engine runs inside `all`).');
  const activities = createActivities({ db, logger, metrics, events, webhooks, catalog, providers, ledger, requiresActionTimeoutMs: config.runs.requiresActionTimeoutMs, mcpSessions });
  const worker = await runTemporalWorker({ ...config.engine.temporal, ...options, logger, activities });
  const running = worker.run();
  return {
    running,
    async stop() {
      worker.worker.shutdown();
      await running;
      await worker.connection.close();
    },
  };
}
