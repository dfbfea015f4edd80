import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

/** A Temporal server of a benchmark's or chaos run's own (`npm run bench -- temporal`, `npm run chaos -- --temporal`). */
export interface TemporalDevServer {
  address: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** The Temporal CLI's dev server on free ports, in memory, its version check off; built first when missing. */
export async function startTemporalDevServer(): Promise<TemporalDevServer> {
  // scripts/temporal.js is plain JavaScript beside the sources: from dist/bench it is two folders up, then scripts/.
  const { ensureCli, startDevArgs } = require(path.resolve(__dirname, '..', '..', 'scripts', 'temporal.js'));
  const binary: string = ensureCli();
  const port = await freePort();
  const uiPort = await freePort();
  const child = spawn(binary, startDevArgs({ port, uiPort }), {
    env: { ...process.env, TEMPORAL_VERSION_CHECK_DISABLED: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const address = `127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (!(await answers(port))) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`the Temporal dev server did not start on ${address}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  // The port answers a little before the frontend serves: give the namespace its moment through a real call.
  const { Connection } = await import('@temporalio/client');
  for (;;) {
    const connection = await Connection.connect({ address }).catch(() => undefined);
    const ok = await connection?.workflowService.describeNamespace({ namespace: 'default' }).then(
      () => true,
      () => false,
    );
    await connection?.close();
    if (ok) break;
    if (Date.now() > deadline) throw new Error('the Temporal dev server has no default namespace');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    address,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
