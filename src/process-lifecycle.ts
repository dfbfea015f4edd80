import type { Server } from 'node:http';
import { createActivities } from './engine/job-kinds';
import { isTemporalEngine, runTemporalWorker } from './engine/temporal-engine';
import type { Runtime } from './runtime';

/**
 * How a process starts its Temporal worker and how any process leaves service (`npm start`, `npm run worker`, the
 * tests' and benchmarks' processes alike).
 */
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
export async function startTemporalWorker(
  runtime: Runtime,
  options: { workflowBundlePath?: string; shutdownGraceMs?: number } = {},
): Promise<RunningWorker> {
  const { config, db, logger, metrics, events, webhooks, catalog, providers, ledger, mcpSessions } = runtime.deps;
  if (!config.engine.temporal)
    throw new Error('A Temporal worker needs TEMPORAL_ADDRESS (the embedded engine runs inside `all`).');
  const activities = createActivities({
    db,
    logger,
    metrics,
    events,
    webhooks,
    catalog,
    providers,
    ledger,
    requiresActionTimeoutMs: config.runs.requiresActionTimeoutMs,
    mcpSessions,
  });
  const worker = await runTemporalWorker({
    ...config.engine.temporal,
    ...options,
    logger,
    activities,
    activitySlots: config.engine.concurrency,
  });
  const running = worker.run();
  // The API of this process (`all`) starts its workflows eagerly on this worker, through its connection.
  const { engine } = runtime.deps;
  const detach = isTemporalEngine(engine) ? engine.startEagerlyOn(worker.connection) : undefined;
  // A worker that failed takes no eager task any more.
  if (detach) void running.then(detach, detach);
  return {
    running,
    async stop() {
      await detach?.();
      worker.shutdown();
      await running;
      await worker.connection.close();
    },
  };
}

/**
 * A deploy's SIGTERM, for every kind of process (`all`, `api`, `worker`): readiness turns to draining at once (idle
 * connections close; requests in flight and open streams go on; the listener closes at hand-over), the engine stops
 * claiming and a worker stops polling, running work goes on for SHUTDOWN_GRACE_MS (a worker's activities for
 * WORKER_SHUTDOWN_GRACE_MS); what still runs then is handed over, not failed (open streams end cleanly, their clients
 * resume elsewhere with `starting_after`; the jobs are resumed by the next process). A stop that hangs past the grace
 * and 15 s more exits the process anyway.
 */
export async function shutDownGracefully({
  runtime,
  server,
  operationsServer,
  worker,
}: {
  runtime: Runtime;
  server?: Server;
  /** The operators' listener: open to the end, so readiness reads `draining` until the process is gone. */
  operationsServer?: Server;
  worker?: RunningWorker;
}): Promise<void> {
  const { config } = runtime.deps;
  const grace = Math.max(config.shutdownGraceMs, worker ? config.engine.temporal!.shutdownGraceMs : 0);
  const force = setTimeout(() => process.exit(1), 15_000 + grace).unref();
  // Idle keep-alive connections close (their clients reconnect, through the load balancer, elsewhere); the listener
  // stays open through the grace, so readiness probes read `draining` and late requests are still answered (jobs
  // they create are left to other processes: this one claims none).
  server?.closeIdleConnections();
  const workerStopped = worker?.stop();
  await runtime.drain(config.shutdownGraceMs);
  const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
  server?.closeIdleConnections();
  await workerStopped;
  // Streams ended at the hand-over; requests still in flight get a moment, then their sockets are closed.
  const cut = setTimeout(() => server?.closeAllConnections(), 2000);
  await closed;
  clearTimeout(cut);
  operationsServer?.closeAllConnections();
  operationsServer?.close();
  await runtime.close();
  clearTimeout(force);
}
