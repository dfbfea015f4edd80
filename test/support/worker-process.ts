/**
 * A Temporal worker in a process of its own, for fault tests (kill -9, SIGTERM):
 * `node -r @swc-node/register test/support/worker-process.ts`. Environment as for `npm run worker`, plus TEST_SCHEMA
 * (the Postgres schema) and TEST_TEMPORAL_WORKFLOW_BUNDLE (the suite's bundle). Started as `npm run worker` starts it
 * (src/service.ts); prints `READY` once it polls, and `STOPPED` when a SIGTERM's drain has ended.
 */
import { loadConfig } from '../../src/config';
import { startService } from '../../src/service';

async function main() {
  const service = await startService(loadConfig(), {
    mode: 'worker',
    schema: process.env.TEST_SCHEMA,
    workflowBundlePath: process.env.TEST_TEMPORAL_WORKFLOW_BUNDLE,
  });
  process.once('SIGTERM', () => {
    void service.worker!.stop().then(async () => {
      process.stdout.write('STOPPED\n');
      await service.runtime.close();
      process.exit(0);
    });
  });
  process.stdout.write('READY\n');
  await service.worker!.running;
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
