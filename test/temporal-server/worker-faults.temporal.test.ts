import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { sql } from 'kysely';
import { workflowIdOf, type JobKind } from '../../src/engine/job-kind';
import { postTranscription, toneWav } from '../audio/audio-fixtures';
import { ADMIN_TOKEN, SIGNING_SECRET, TestApp, postgresUrl, temporalAddress } from '../support/harness';
import { connectClient, describeOnTemporal } from './temporal-client';

/**
 * Workers in processes of their own, as deployed: an API process (this test's app, no worker in it) and worker
 * processes (test/support/worker-process.ts, the production worker) on one Postgres and the Temporal server.
 * Kill -9 a worker in the middle of generations: the other one finishes every Run, transcription and Response,
 * each billed once, nothing held. SIGTERM a worker: its running activity finishes within the grace. Postgres only
 * (processes cannot share PGlite).
 */
const onPostgres = postgresUrl ? describeOnTemporal : describe.skip;
const WORKER = path.join(__dirname, '..', 'support', 'worker-process.ts');

jest.setTimeout(180_000);

interface WorkerProcess {
  child: ChildProcess;
  output: string;
  /** Resolves when the process printed `line`. */
  printed(line: string): Promise<void>;
}

onPostgres('workers in processes of their own', () => {
  let app: TestApp;
  let client: Awaited<ReturnType<typeof connectClient>>;
  let key: string;
  let accountId: string;
  let textAssistantId: number;
  const started: WorkerProcess[] = [];

  beforeAll(async () => {
    app = await TestApp.start({ worker: false });
    client = await connectClient();
    ({ key, accountId } = await app.createAccount({ balance: 10_000_000 }));
    textAssistantId = (await app.request('POST', '/v2/assistants', { key, body: { model: 'dev-echo', name: 'Echo' } }))
      .body.id;
  });

  afterEach(async () => {
    for (const worker of started.splice(0)) await killWorker(worker);
  });

  afterAll(async () => {
    await client?.close();
    await app?.close();
  });

  function startWorker(env: Record<string, string> = {}): Promise<WorkerProcess> {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', WORKER], {
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        LOG_LEVEL: 'silent',
        DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-worker-')),
        ADMIN_TOKEN,
        KEY_SIGNING_SECRET: SIGNING_SECRET,
        OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
        DATABASE_URL: postgresUrl!,
        TEST_SCHEMA: app.schema!,
        TEMPORAL_ADDRESS: temporalAddress!,
        TEMPORAL_TASK_QUEUE: app.runtime.deps.config.engine.temporal!.taskQueue,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const worker: WorkerProcess = {
      child,
      output: '',
      printed: (line) =>
        new Promise((resolve, reject) => {
          const check = () => worker.output.split('\n').includes(line) && resolve();
          check();
          child.stdout!.on('data', check);
          child.once('exit', (code) =>
            reject(new Error(`worker exited with ${code} before printing ${line}: ${worker.output}`)),
          );
        }),
    };
    child.stdout!.on('data', (chunk) => (worker.output += chunk));
    child.stderr!.on('data', (chunk) => (worker.output += chunk));
    started.push(worker);
    return worker.printed('READY').then(() => worker);
  }

  async function killWorker(worker: WorkerProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
    const exited = new Promise((resolve) => worker.child.once('exit', resolve));
    worker.child.kill(signal);
    await exited;
  }

  const handle = (kind: JobKind, id: string) => client.workflow.getHandle(workflowIdOf({ kind, id }));

  /** The attempts of each activity in a workflow's history (ActivityTaskStarted carries the attempt). */
  async function attemptsOf(kind: JobKind, id: string): Promise<Record<string, number>> {
    const events = JSON.parse(historyToJSON(await handle(kind, id).fetchHistory())).events as any[];
    const names = new Map(
      events
        .filter((event) => event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')
        .map((event) => [event.eventId, event.activityTaskScheduledEventAttributes.activityType.name]),
    );
    const attempts: Record<string, number> = {};
    for (const event of events.filter((event) => event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED')) {
      const name = names.get(event.activityTaskStartedEventAttributes.scheduledEventId)!;
      attempts[name] = Math.max(attempts[name] ?? 0, event.activityTaskStartedEventAttributes.attempt);
    }
    return attempts;
  }

  async function createRun(text: string, assistantId: number): Promise<string> {
    const created = await app.request('POST', '/v2/threads/runs', {
      key,
      body: { assistant_id: assistantId, thread: { messages: [{ role: 'user', content: text }] } },
    });
    expect(created.status).toBe(200);
    return created.body.id;
  }

  /** Ledger invariants: no operation debited twice, nothing held, the balance what the debits left. */
  async function expectLedgerExact(initial: number) {
    const doubles = await sql<{ operation_key: string }>`
      select operation_key from ledger_transactions where account_id = ${accountId} and operation_key is not null
      group by operation_key having count(*) > 1`.execute(app.db);
    expect(doubles.rows).toEqual([]);
    const account = await app.db
      .selectFrom('accounts')
      .select(['balance', 'held'])
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(account.held).toBe(0);
    const debited = await sql<{
      total: string;
    }>`select coalesce(sum(amount), 0) as total from ledger_transactions where account_id = ${accountId} and type = 'debit'`.execute(
      app.db,
    );
    expect(Number(account.balance)).toBe(initial - Number(debited.rows[0].total));
    expect(
      await app.db.selectFrom('ledger_holds').select('operation_key').where('account_id', '=', accountId).execute(),
    ).toEqual([]);
  }

  it('kill -9 of a worker mid-generation: the other worker completes every Run, transcription and Response (continuing streamed text), billed once', async () => {
    const initial = Number(
      (await app.db.selectFrom('accounts').select('balance').where('id', '=', accountId).executeTakeFirstOrThrow())
        .balance,
    );
    const doomed = await startWorker();
    // Long enough to be cut: Runs answering for 10 s (a Run stores its message when the call ends); transcriptions and tool-calling Responses that think for 8 s
    // before their first output (nothing emitted yet when the worker dies, so the vendor call simply runs again).
    const runs = [
      await createRun('/delay 500 /words 20', textAssistantId),
      await createRun('/delay 600 /words 15', textAssistantId),
    ];
    const transcriptions: string[] = [];
    for (let i = 0; i < 2; i++) {
      const submitted = await postTranscription(
        app.baseUrl,
        key,
        { bytes: toneWav(1, [[0.2, 0.8]]), name: 'tone.wav' },
        { model: 'dev-stt-async', prompt: '/delay 8000' },
      );
      expect(submitted.status).toBe(200);
      transcriptions.push(submitted.body.request_id);
    }
    const tools = [
      {
        type: 'function',
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    const responses: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await app.request('POST', '/v2/responses', {
        key,
        body: { model: 'dev-echo', input: '/delay 8000 /call get_weather {"city":"Rome"}', tools },
      });
      expect(created.status).toBe(200);
      responses.push(created.body.id);
    }
    // And Responses streaming their text when the worker dies: the survivor continues each from what it had stored.
    const streaming: string[] = [];
    for (let i = 0; i < 2; i++)
      streaming.push(
        (
          await app.request('POST', '/v2/responses', {
            key,
            body: { model: 'dev-echo', input: '/delay 400 /words 20' },
          })
        ).body.id,
      );
    responses.push(...streaming);
    const all: Array<[JobKind, string]> = [
      ...runs.map((id) => ['run', id] as [JobKind, string]),
      ...transcriptions.map((id) => ['transcription', id] as [JobKind, string]),
      ...responses.map((id) => ['response', id] as [JobKind, string]),
    ];
    // Every vendor call has started on the doomed worker (the workflow shows its activity running there).
    for (const [kind, id] of all) {
      for (;;) {
        const pending = (await handle(kind, id).describe()).raw.pendingActivities ?? [];
        if (
          pending.some(
            (activity) =>
              ['callModel', 'transcribeAudio', 'startAndCallProvider'].includes(activity.activityType?.name ?? '') &&
              activity.lastStartedTime,
          )
        )
          break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    // Killed at once (before its successor starts: a slow start-up must not let the calls end before the kill).
    await killWorker(doomed);
    await startWorker();

    // The survivor takes over once the dead worker's heartbeats stop (heartbeat timeout 10 s).
    for (const [kind, id] of all) expect([kind, id, await handle(kind, id).result()]).toEqual([kind, id, 'completed']);
    for (const [kind, id] of all) {
      const attempts = await attemptsOf(kind, id);
      const vendorCall = { run: 'callModel', transcription: 'transcribeAudio', response: 'startAndCallProvider' }[kind];
      expect([kind, id, attempts[vendorCall]]).toEqual([kind, id, 2]);
    }
    const runRows = await app.db.selectFrom('runs').select(['id', 'status']).where('id', 'in', runs).execute();
    expect(runRows.map((row) => row.status)).toEqual(['completed', 'completed']);
    const transcriptionRows = await app.db
      .selectFrom('transcriptions')
      .select('status')
      .where('id', 'in', transcriptions)
      .execute();
    expect(transcriptionRows.map((row) => row.status)).toEqual(['completed', 'completed']);
    for (const id of responses.filter((id) => !streaming.includes(id))) {
      const reply = await app.request('GET', `/v2/responses/${id}`, { key });
      expect(reply.body).toMatchObject({
        status: 'completed',
        output: [{ type: 'function_call', name: 'get_weather' }],
      });
    }
    const words = Array.from({ length: 20 }, (_, index) => `w${index + 1}`).join(' ');
    for (const id of streaming) {
      const reply = await app.request('GET', `/v2/responses/${id}`, { key });
      expect(reply.body).toMatchObject({
        status: 'completed',
        output: [{ type: 'message', status: 'completed', content: [{ text: words }] }],
      });
      // Its stream, as a client reading it from the start sees it: one message, each word once, no gap.
      const stream = await fetch(`${app.baseUrl}/v2/responses/${id}?stream=true`, { headers: { 'x-auth-token': key } });
      const events = (await stream.text())
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)));
      expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
      expect(
        events
          .filter((event) => event.type === 'response.output_text.delta')
          .map((event) => event.delta)
          .join(''),
      ).toBe(words);
      expect(events.filter((event) => event.type === 'response.output_item.added')).toHaveLength(1);
    }
    await expectLedgerExact(initial);
  });

  it('SIGTERM: the worker stops taking work and lets its running activity finish within the grace', async () => {
    const draining = await startWorker({ WORKER_SHUTDOWN_GRACE_MS: '60000' });
    const runId = await createRun('/delay 250 /words 16', textAssistantId);
    for (;;) {
      const pending = (await handle('run', runId).describe()).raw.pendingActivities ?? [];
      if (pending.some((activity) => activity.activityType?.name === 'callModel' && activity.lastStartedTime)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The finalisation after the vendor call needs a worker that still polls: the second one.
    await startWorker();
    draining.child.kill('SIGTERM');
    await draining.printed('STOPPED');
    expect(await handle('run', runId).result()).toBe('completed');
    // The vendor call was not cut and retried: it finished on the draining worker, in its first attempt.
    expect((await attemptsOf('run', runId)).callModel).toBe(1);
    const messages = await app.request(
      'GET',
      `/v2/threads/${(await app.db.selectFrom('runs').select('thread_id').where('id', '=', runId).executeTakeFirstOrThrow()).thread_id}/messages`,
      { key },
    );
    expect(messages.body.data.map((message: any) => message.role)).toEqual(['assistant', 'user']);
  });
});
