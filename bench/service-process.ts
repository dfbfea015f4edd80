import { loadConfig } from '../src/config';
import { startService } from '../src/service';

/**
 * The service under test, in its own process so that it does not share an event loop (or, with
 * pinning, a core) with the load generator. Configuration comes from the environment the parent sets,
 * exactly as in production; `--schema NAME` runs in that Postgres schema, `--with-worker` runs a Temporal worker too
 * (`all`). Reports `{port, operationsPort, key}` over IPC
 * once it listens and a funded account with one API key exists.
 */
async function main() {
  const schemaFlag = process.argv.indexOf('--schema');
  const schema = schemaFlag >= 0 ? process.argv[schemaFlag + 1] : undefined;
  const config = loadConfig();
  // With TEMPORAL_ADDRESS the API alone (the benchmark starts its workers in processes of their own), unless
  // `--with-worker`: then the API and a worker, as `npm start` runs them.
  const withWorker = process.argv.includes('--with-worker');
  const service = await startService(config, {
    mode: config.engine.temporal && !withWorker ? 'api' : 'all',
    schema,
    listen: { host: '127.0.0.1', port: 0, operationsPort: 0 },
  });
  const { runtime, server, operationsServer } = service;
  server!.keepAliveTimeout = 60_000;
  const account = await runtime.deps.accounts.createAccount({
    name: 'bench',
    balance: 1_000_000_000_000,
    mcpEnabled: true,
  });
  const { key } = await runtime.deps.accounts.createKey(account.id, { name: 'bench' });
  process.send?.({
    port: service.port,
    operationsPort: service.operationsPort,
    key,
    accountId: account.id,
  });

  const stop = async () => {
    for (const listener of [server, operationsServer]) {
      listener?.closeAllConnections();
      listener?.close();
    }
    await runtime.close();
    process.exit(0);
  };
  // The parent gone: stop at once. SIGTERM: as the service does in production (drain for SHUTDOWN_GRACE_MS, then
  // hand over what still runs), which the chaos suite's rolling restart exercises.
  process.on('disconnect', () => void stop());
  process.once('SIGTERM', () => void service.shutdown().then(() => process.exit(0)));
}

main().catch((error) => {
  process.stderr.write(`bench service failed to start: ${error?.stack ?? error}\n`);
  process.exit(1);
});
