import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config';
import { createHttpServer } from './http/server';
import { shutDownGracefully, startTemporalWorker, type RunningWorker } from './process-lifecycle';
import { createRuntime, type Runtime } from './runtime';

/** What a process runs: `all` (API and engine; with TEMPORAL_ADDRESS, a worker too), `api` or `worker` (Temporal). */
export type ServiceMode = 'all' | 'api' | 'worker';

export interface ServiceOptions {
  mode: ServiceMode;
  /** The Postgres schema to use (tests and benchmarks run each in a schema of their own). */
  schema?: string;
  /** Where the API and the operators' listener listen, instead of the configuration's (port 0: any free port). */
  listen?: { host: string; port: number; operationsPort?: number };
  /** The Temporal workflow bundle, instead of the one `npm run build` wrote (the test suite builds its own). */
  workflowBundlePath?: string;
  /** Runs after the engine started and before the API listens (the first start's default account). */
  beforeListen?(runtime: Runtime): Promise<void>;
}

/** A started process: its runtime, listeners and worker, and its way out (a deploy's SIGTERM). */
export interface RunningService {
  runtime: Runtime;
  server?: Server;
  operationsServer?: Server;
  worker?: RunningWorker;
  /** The ports listened on (resolved when `listen` asked for any free one). */
  port?: number;
  operationsPort?: number;
  /** Drains, hands over and closes everything (src/process-lifecycle.ts, shutDownGracefully). */
  shutdown(): Promise<void>;
}

/**
 * Starts the service as a process runs it: `npm start` and `npm run worker` (src/main.ts), and the processes the tests,
 * benchmarks and chaos suite start, alike. A `worker` needs TEMPORAL_ADDRESS and a database other processes share.
 */
export async function startService(config: Config, options: ServiceOptions): Promise<RunningService> {
  const { mode } = options;
  if (mode === 'worker' && !config.engine.temporal)
    throw new Error('`worker` runs Temporal workflows: set TEMPORAL_ADDRESS (the embedded engine runs inside `all`).');
  if (mode === 'worker' && !config.database.url)
    throw new Error('A separate `worker` process cannot share the embedded database: set DATABASE_URL (or run `all`).');
  const runtime = await createRuntime(config, { database: { schema: options.schema } });
  const { logger } = runtime.deps;
  let server: Server | undefined;
  let operationsServer: Server | undefined;
  let worker: RunningWorker | undefined;
  const service: RunningService = {
    runtime,
    shutdown: () => shutDownGracefully({ runtime, server, operationsServer, worker }),
  };
  // `all` with TEMPORAL_ADDRESS runs the worker in this process too; `worker` runs only the worker.
  if (mode === 'worker' || (mode === 'all' && config.engine.temporal)) {
    worker = service.worker = await startTemporalWorker(runtime, { workflowBundlePath: options.workflowBundlePath });
  }
  if (mode === 'worker') return service;

  // `all` runs the engine in this process; with Temporal, `api` only starts workflows (workers run them).
  if (mode === 'all' || config.engine.temporal) await runtime.startEngine();
  await options.beforeListen?.(runtime);
  const host = options.listen?.host ?? config.http.host;
  server = service.server = await listen(
    createHttpServer(runtime.app, config.http),
    options.listen?.port ?? config.http.port,
    host,
  );
  service.port = (server.address() as AddressInfo).port;
  logger.info({ port: service.port, host, database: runtime.deps.database.kind }, 'listening');
  const operations = config.http.operations;
  if (operations) {
    const operationsPort = options.listen?.operationsPort ?? operations.port;
    const operationsHost = options.listen?.host ?? operations.host;
    operationsServer = service.operationsServer = await listen(
      createHttpServer(runtime.operationsApp, config.http),
      operationsPort,
      operationsHost,
    );
    service.operationsPort = (operationsServer.address() as AddressInfo).port;
    logger.info(
      { port: service.operationsPort, host: operationsHost },
      'operations listener (healthz, readyz, metrics)',
    );
  }
  return service;
}

async function listen(server: Server, port: number, host: string): Promise<Server> {
  server.listen(port, host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  return server;
}
