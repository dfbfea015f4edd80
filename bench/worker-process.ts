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
  const stop = () => void worker!.stop().finally(() => runtime.close().finally(() => process.exit(0)));
  process.once('disconnect', stop);
  process.once('SIGTERM', stop);
}

main().catch((error) => {
  process.stderr.write(`bench worker failed to start: ${error?.stack ?? error}\n`);
  process.exit(1);
});
