import type { Server } from 'node:http';
import { bootstrapDefaultAccount, firstStartBanner } from './admin/bootstrap';
import { ConfigError, loadConfig } from './config';
import { createHttpServer } from './http/server';
import { TemporalUnreachable } from './engine/temporal-engine';
import { shutDownGracefully, startTemporalWorker, type RunningWorker } from './process-lifecycle';
import { createRuntime } from './runtime';

type Mode = 'all' | 'api' | 'worker' | 'migrate';

// The AI SDK prints its own warnings with console.warn; our logs are structured JSON only.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

/** Entry point: `all` (API + embedded engine; default), `api`, `worker` (Temporal), `migrate`. */
async function main(mode: Mode): Promise<void> {
  const config = loadConfig();
  const runtime = await createRuntime(config);
  const { logger } = runtime.deps;
  if (mode === 'migrate') {
    logger.info('migrations applied');
    await runtime.close();
    return;
  }

  let server: Server | undefined;
  let operationsServer: Server | undefined;
  let worker: RunningWorker | undefined;
  // `all` with TEMPORAL_ADDRESS runs the worker in this process too; `worker` runs only the worker.
  if (mode === 'worker' || (mode === 'all' && config.engine.temporal)) {
    if (!config.engine.temporal)
      throw new Error(
        '`worker` runs Temporal workflows: set TEMPORAL_ADDRESS (the embedded engine runs inside `all`).',
      );
    if (mode === 'worker' && !config.database.url) {
      throw new Error(
        'A separate `worker` process cannot share the embedded database: set DATABASE_URL (or run `all`).',
      );
    }
    worker = await startTemporalWorker(runtime);
    worker.running.catch((error) => {
      logger.fatal({ err: error }, 'temporal worker stopped');
      process.exit(1);
    });
  }
  if (mode === 'all' || mode === 'api') {
    // `all` runs the engine in this process; with Temporal, `api` only starts workflows (workers run them).
    if (mode === 'all' || config.engine.temporal) await runtime.startEngine();
    if (runtime.adminTokenFile) print(`Admin token: ${runtime.adminTokenFile}`);
    const bootstrap = await bootstrapDefaultAccount(runtime.deps);
    if (bootstrap) print(firstStartBanner(bootstrap, config.http.port, process.stdout.isTTY === true));
    server = createHttpServer(runtime.app, config.http).listen(config.http.port, config.http.host);
    await new Promise<void>((resolve, reject) => server!.once('listening', resolve).once('error', reject));
    logger.info({ port: config.http.port, host: config.http.host, database: runtime.deps.database.kind }, 'listening');
    const operations = config.http.operations;
    if (operations) {
      operationsServer = createHttpServer(runtime.operationsApp, config.http).listen(operations.port, operations.host);
      await new Promise<void>((resolve, reject) => operationsServer!.once('listening', resolve).once('error', reject));
      logger.info({ port: operations.port, host: operations.host }, 'operations listener (healthz, readyz, metrics)');
    }
    print(`Console: http://127.0.0.1:${config.http.port}/console (sign in with an API key)`);
    print(`API reference: http://127.0.0.1:${config.http.port}/docs (OpenAPI: /openapi.json)`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: draining');
    await shutDownGracefully({ runtime, server, operationsServer, worker });
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

function print(message: string) {
  process.stdout.write(`\n${message}\n\n`);
}

const mode = (process.argv[2] ?? 'all') as Mode;
if (!['all', 'api', 'worker', 'migrate'].includes(mode)) {
  process.stderr.write(`Unknown mode "${mode}". Use: all | api | worker | migrate\n`);
  process.exit(2);
}
main(mode).catch((error) => {
  process.stderr.write(
    error instanceof ConfigError || error instanceof TemporalUnreachable
      ? `${error.message}\n`
      : `Start-up failed: ${error?.stack ?? error}\n`,
  );
  process.exit(1);
});
