/**
 * The service as a separate process, for crash tests: `node -r @swc-node/register test/support/server-process.ts`.
 * Environment as for `npm start`, plus TEST_SCHEMA (Postgres schema to use). Prints `READY <port>` when listening.
 */
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config';
import { createHttpServer } from '../../src/http/server';
import { createRuntime } from '../../src/runtime';
import { shutDownGracefully } from '../../src/process-lifecycle';

async function main() {
  const config = loadConfig();
  const runtime = await createRuntime(config, { database: { schema: process.env.TEST_SCHEMA } });
  await runtime.startEngine();
  const server = createHttpServer(runtime.app, config.http).listen(config.http.port, '127.0.0.1');
  server.once('listening', () => process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`));
  // SIGTERM as `npm start` handles it (a deploy): drain, hand over, exit.
  process.once('SIGTERM', () => void shutDownGracefully({ runtime, server }).then(() => process.exit(0)));
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
