import { loadConfig } from '../src/config';
import { startService } from '../src/service';

/**
 * A Temporal worker under benchmark, in its own process, exactly as `npm run worker` runs it (the workflow bundle
 * `npm run build` wrote); `--schema NAME` runs in that Postgres schema. Reports `{pid}` over IPC once it polls;
 * drains and exits when the parent goes away.
 */
async function main() {
  const schemaFlag = process.argv.indexOf('--schema');
  const schema = schemaFlag >= 0 ? process.argv[schemaFlag + 1] : undefined;
  const { runtime, worker } = await startService(loadConfig(), { mode: 'worker', schema });
  process.send?.({ pid: process.pid });
  const stop = () =>
    void worker!.stop().finally(async () => {
      // The generations it resumed after another worker's hand-over or crash: a worker has no /metrics, and the chaos
      // suite's rolling restart counts them.
      const resumed = (await runtime.deps.metrics.generationsResumed.get()).values;
      const count = resumed.reduce((sum, value) => sum + value.value, 0);
      if (process.connected) await new Promise((sent) => process.send!({ resumed: count }, undefined, {}, sent));
      await runtime.close().finally(() => process.exit(0));
    });
  process.once('disconnect', stop);
  process.once('SIGTERM', stop);
}

main().catch((error) => {
  process.stderr.write(`bench worker failed to start: ${error?.stack ?? error}\n`);
  process.exit(1);
});
