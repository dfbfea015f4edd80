import { bootstrapDefaultAccount, firstStartBanner } from './admin/bootstrap';
import { ConfigError, loadConfig } from './config';
import { TemporalUnreachable } from './engine/temporal-engine';
import { createRuntime } from './runtime';
import { startService, type ServiceMode } from './service';

type Mode = ServiceMode | 'migrate';

// The AI SDK prints its own warnings with console.warn; our logs are structured JSON only.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

/** Entry point: `all` (API + embedded engine; default), `api`, `worker` (Temporal), `migrate`. */
async function main(mode: Mode): Promise<void> {
  const config = loadConfig();
  if (mode === 'migrate') {
    const runtime = await createRuntime(config);
    runtime.deps.logger.info('migrations applied');
    await runtime.close();
    return;
  }

  const service = await startService(config, {
    mode,
    async beforeListen(runtime) {
      if (runtime.adminTokenFile) print(`Admin token: ${runtime.adminTokenFile}`);
      const bootstrap = await bootstrapDefaultAccount(runtime.deps);
      if (bootstrap) print(firstStartBanner(bootstrap, config.http.port, process.stdout.isTTY === true));
    },
  });
  const { logger } = service.runtime.deps;
  service.worker?.running.catch((error) => {
    logger.fatal({ err: error }, 'temporal worker stopped');
    process.exit(1);
  });
  if (service.server) {
    print(`Console: http://127.0.0.1:${service.port}/console (sign in with an API key)`);
    print(`API reference: http://127.0.0.1:${service.port}/docs (OpenAPI: /openapi.json)`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: draining');
    await service.shutdown();
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
