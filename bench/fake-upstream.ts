import { startFakeOpenAI } from '../test/fakes';

/**
 * Child-process entry for the benchmark's vendor: the shared OpenAI fake (test/fakes) in zero-latency
 * mode, where every request gets a reply prepared once, with no recording, scripting or parsing after the
 * first. Reports `{port}` over IPC; exits when the parent goes away.
 */
startFakeOpenAI({ zeroLatency: true }).then((server) => {
  process.send?.({ port: Number(new URL(server.url).port) });
  process.on('disconnect', () => void server.close().finally(() => process.exit(0)));
});
