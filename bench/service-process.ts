import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config';
import { createHttpServer } from '../src/http/server';
import { shutDownGracefully } from '../src/process-lifecycle';
import { createRuntime } from '../src/runtime';

/**
 * The service under test, in its own process so that it does not share an event loop (or, with
 * pinning, a core) with the load generator. Configuration comes from the environment the parent sets,
 * exactly as in production; `--schema NAME` runs in that Postgres schema. Reports `{port, operationsPort, key}` over IPC
 * once it listens and a funded account with one API key exists.
 */
async function main() {
  const schemaFlag = process.argv.indexOf('--schema');
  const schema = schemaFlag >= 0 ? process.argv[schemaFlag + 1] : undefined;
  const config = loadConfig();
  const runtime = await createRuntime(config, { database: { schema } });
  await runtime.startEngine();
  const server = createHttpServer(runtime.app, config.http).listen(0, '127.0.0.1');
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.once('listening', resolve));
  // OPS_PORT set (0: any free port): the operators' listener too, as in production.
  const operationsServer = config.http.operations
    ? createHttpServer(runtime.operationsApp, config.http).listen(0, '127.0.0.1')
    : undefined;
  if (operationsServer) await new Promise<void>((resolve) => operationsServer.once('listening', resolve));
  const account = await runtime.deps.accounts.createAccount({
    name: 'bench',
    balance: 1_000_000_000_000,
    mcpEnabled: true,
  });
  const { key } = await runtime.deps.accounts.createKey(account.id, { name: 'bench' });
  process.send?.({
    port: (server.address() as AddressInfo).port,
    operationsPort: operationsServer ? (operationsServer.address() as AddressInfo).port : undefined,
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
  process.once(
    'SIGTERM',
    () => void shutDownGracefully({ runtime, server, operationsServer }).then(() => process.exit(0)),
  );
}

main().catch((error) => {
  process.stderr.write(`bench service failed to start: ${error?.stack ?? error}\n`);
  process.exit(1);
});
