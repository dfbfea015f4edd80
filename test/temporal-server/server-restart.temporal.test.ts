import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { workflowIdOf, type JobKind } from '../../src/engine/job-kind';
import { postTranscription, toneWav } from '../audio/audio-fixtures';
import { pollUntil } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { describeOnTemporal } from './temporal-client';

/**
 * The Temporal server itself goes away in the middle of work (kill -9) and comes back on the same state: every
 * Response, Run and transcription resumes and completes, billed once. The test runs a dev server of its own (the
 * CLI that scripts/temporal.js builds), with its state in a file, so that it can kill and restart it.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureCli, startDevArgs } = require('../../scripts/temporal.js') as {
  ensureCli(): string;
  startDevArgs(options: { port: number; uiPort: number; dbFile?: string }): string[];
};

jest.setTimeout(180_000);

describeOnTemporal('a Temporal server restart in the middle of work', () => {
  let state: string;
  let ports: { port: number; uiPort: number };
  let server: ChildProcess | undefined;
  let app: TestApp;

  beforeAll(async () => {
    state = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-temporal-restart-'));
    ports = { port: await freePort(), uiPort: await freePort() };
    server = await startServer();
    app = await TestApp.start({ env: { TEMPORAL_ADDRESS: `127.0.0.1:${ports.port}` } });
  });

  afterAll(async () => {
    await app?.close();
    await stopServer('SIGTERM');
    fs.rmSync(state, { recursive: true, force: true });
  });

  async function startServer(): Promise<ChildProcess> {
    const child = spawn(ensureCli(), startDevArgs({ ...ports, dbFile: path.join(state, 'dev.sqlite') }), {
      env: { ...process.env, TEMPORAL_VERSION_CHECK_DISABLED: '1' },
      stdio: 'ignore',
    });
    // Serving once the default namespace answers a real call.
    await pollUntil(
      async () => {
        const connection = await Connection.connect({
          address: `127.0.0.1:${ports.port}`,
          connectTimeout: '1 second',
        }).catch(() => undefined);
        const ok = await connection?.workflowService.describeNamespace({ namespace: 'default' }).then(
          () => true,
          () => false,
        );
        await connection?.close();
        return ok ?? false;
      },
      (ok) => ok,
      60_000,
    );
    return child;
  }

  async function stopServer(signal: NodeJS.Signals): Promise<void> {
    if (!server || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    server.kill(signal);
    await exited;
  }

  it('kill -9 of the server while Responses, a Run and a transcription run: all complete once it is back, billed once', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1_000_000 });
    const responses: string[] = [];
    for (let i = 0; i < 3; i++)
      responses.push(
        (
          await app.request('POST', '/v2/responses', {
            key,
            body: { model: 'dev-echo', input: '/delay 300 /words 15' },
          })
        ).body.id,
      );
    const assistant = await app.request('POST', '/v2/assistants', { key, body: { model: 'dev-echo', name: 'Echo' } });
    const run = await app.request('POST', '/v2/threads/runs', {
      key,
      body: {
        assistant_id: assistant.body.id,
        thread: { messages: [{ role: 'user', content: '/delay 300 /words 12' }] },
      },
    });
    const transcription = await postTranscription(
      app.baseUrl,
      key,
      { bytes: toneWav(1, [[0.2, 0.8]]), name: 'tone.wav' },
      { model: 'dev-stt-async', prompt: '/delay 3000' },
    );
    // Everything is running (output is streaming) when the server dies.
    for (const id of responses) {
      await pollUntil(
        () => app.request('GET', `/v2/responses/${id}`, { key }).then((reply) => reply.body.status),
        (status) => status === 'in_progress',
        20_000,
      );
    }
    await stopServer('SIGKILL');
    // Down for a few seconds: the activities go on in the worker; their heartbeats and completions wait for it.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    server = await startServer();

    const connection = await Connection.connect({ address: `127.0.0.1:${ports.port}` });
    try {
      const client = new Client({ connection });
      const jobs: Array<[JobKind, string]> = [
        ...responses.map((id) => ['response', id] as [JobKind, string]),
        ['run', run.body.id],
        ['transcription', transcription.body.request_id],
      ];
      for (const [kind, id] of jobs)
        expect([kind, id, await client.workflow.getHandle(workflowIdOf({ kind, id })).result()]).toEqual([
          kind,
          id,
          'completed',
        ]);
    } finally {
      await connection.close();
    }
    for (const id of responses) {
      const reply = await app.request('GET', `/v2/responses/${id}`, { key });
      expect(reply.body).toMatchObject({
        status: 'completed',
        output: [{ content: [{ text: Array.from({ length: 15 }, (_, i) => `w${i + 1}`).join(' ') }] }],
      });
    }
    const debits = await app.db
      .selectFrom('ledger_transactions')
      .select('operation_key')
      .where('account_id', '=', accountId)
      .where('type', '=', 'debit')
      .execute();
    const keys = debits.map((debit) => debit.operation_key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toHaveLength(5);
    const account = await app.db
      .selectFrom('accounts')
      .select('held')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(account.held).toBe(0);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
    probe.once('error', reject);
  });
}
