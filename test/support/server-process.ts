/**
 * The service as a separate process, for crash tests: `node -r @swc-node/register test/support/server-process.ts`.
 * Environment as for `npm start`, plus TEST_SCHEMA (Postgres schema to use) and, with TEMPORAL_ADDRESS,
 * TEST_TEMPORAL_WORKFLOW_BUNDLE (the suite's bundle). Started as `npm start` starts it (src/service.ts); prints
 * `READY <port>` when listening.
 */
import { loadConfig } from '../../src/config';
import { startService } from '../../src/service';

async function main() {
  const service = await startService(loadConfig(), {
    mode: 'all',
    schema: process.env.TEST_SCHEMA,
    listen: { host: '127.0.0.1', port: Number(process.env.PORT ?? 0) },
    workflowBundlePath: process.env.TEST_TEMPORAL_WORKFLOW_BUNDLE,
  });
  process.stdout.write(`READY ${service.port}\n`);
  // SIGTERM as `npm start` handles it (a deploy): drain, hand over, exit.
  process.once('SIGTERM', () => void service.shutdown().then(() => process.exit(0)));
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
