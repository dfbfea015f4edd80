/**
 * A Temporal worker in a process of its own, for fault tests (kill -9, SIGTERM):
 * `node -r @swc-node/register test/support/worker-process.ts`. Environment as for `npm run worker`, plus TEST_SCHEMA
 * (the Postgres schema) and TEST_TEMPORAL_WORKFLOW_BUNDLE (the suite's bundle). Prints `READY` once it polls, and
 * `STOPPED` when a SIGTERM's drain has ended.
 */
import { loadConfig } from '../../src/config';
import { createRuntime } from '../../src/runtime';
import { startTemporalWorker } from '../../src/process-lifecycle';

async function main() {
  const config = loadConfig();
  const runtime = await createRuntime(config, { database: { schema: process.env.TEST_SCHEMA } });
  const worker = await startTemporalWorker(runtime, { workflowBundlePath: process.env.TEST_TEMPORAL_WORKFLOW_BUNDLE });
  process.once('SIGTERM', () => {
    void worker.stop().then(async () => {
      process.stdout.write('STOPPED\n');
      await runtime.close();
      process.exit(0);
    });
  });
  process.stdout.write('READY\n');
  await worker.running;
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
