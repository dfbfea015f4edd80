import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { workflowIdOf } from '../../src/engine/job-kind';
import { runTemporalWorker } from '../../src/engine/temporal-engine';
import { postTranscription, toneWav } from '../audio/audio-fixtures';
import { pollUntil } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { startReceiver } from '../webhooks/receiver';

/**
 * Asynchronous transcriptions against a real Temporal server (`npm run test:temporal`), as runs.temporal.test.ts
 * does for Runs: TEMPORAL_ADDRESS=host:7233 or TEMPORAL_CLI_PATH=/path/temporal. The API runs with the Temporal
 * engine and the production worker serves a task queue of its own. Histories are saved to
 * test/temporal/fixtures/histories/transcription-<scenario>.json for the offline replay tests.
 */
const address = process.env.TEMPORAL_ADDRESS;
const cliPath = process.env.TEMPORAL_CLI_PATH;
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const enabled = Boolean(address || cliPath);
const HISTORIES = path.join(__dirname, '..', 'temporal', 'fixtures', 'histories');

if (!enabled) {
  process.stdout.write('\nTemporal server suite (transcriptions) skipped: set TEMPORAL_ADDRESS=host:7233 or TEMPORAL_CLI_PATH=/path/to/temporal to run it.\n\n');
}

(enabled ? describe : describe.skip)('asynchronous transcriptions on a real Temporal server', () => {
  let env: TestWorkflowEnvironment;
  let app: TestApp;
  let worker: Awaited<ReturnType<typeof runTemporalWorker>>;
  let running: Promise<void>;
  let key: string;
  const taskQueue = `switchyard-test-stt-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    env = address
      ? await TestWorkflowEnvironment.createFromExistingServer({ address, namespace })
      : await TestWorkflowEnvironment.createLocal({ server: { executable: { type: 'existing-path', path: cliPath! } } });
    app = await TestApp.start({ env: { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? namespace, TEMPORAL_TASK_QUEUE: taskQueue } });
    expect(app.runtime.deps.engine.name).toBe('temporal');
    const { db, logger, events, webhooks, catalog, providers, ledger } = app.runtime.deps;
    worker = await runTemporalWorker({ address: env.address, namespace: env.namespace ?? namespace, taskQueue, logger, activities: createActivities({ db, logger, events, webhooks, catalog, providers, ledger }) });
    running = worker.run();
    ({ key } = await app.createAccount());
    fs.mkdirSync(HISTORIES, { recursive: true });
  });

  afterAll(async () => {
    if (worker) {
      worker.shutdown();
      await running;
      await worker.connection.close();
    }
    await app?.close();
    await env?.teardown();
  });

  const handle = (id: string) => env.client.workflow.getHandle(workflowIdOf({ kind: 'transcription', id }));

  it('queued → completed through the workflow, with result, meta, one callback and one debit; its history recorded', async () => {
    const receiver = await startReceiver();
    try {
      const submitted = await postTranscription(app.baseUrl, key, { bytes: toneWav(2, [[0.5, 1.5]]), name: 'tones.wav' }, { model: 'dev-stt-async', meta: '{"k":"v"}', callback_url: `${receiver.url}/cb` });
      expect(submitted.body.status).toBe('queued');
      const id = submitted.body.request_id as string;
      expect(await handle(id).result()).toBe('completed');
      const check = await pollUntil(() => app.request('GET', `/v2/audio/transcription/check/${id}`, { key }).then((reply) => reply.body), (body) => body.status === 'completed', 10_000);
      expect(check).toEqual({ request_id: id, status: 'completed' });
      const result = await app.request('GET', `/v2/audio/transcription/result/${id}`, { key });
      expect(result.body).toMatchObject({ duration: 2, segments: [{ start: 0.5, end: 1.5 }], meta: { k: 'v' }, usage: { cost: 2 } });
      expect(receiver.requests).toHaveLength(1);
      expect(await app.db.selectFrom('ledger_transactions').select('id').where('operation_key', '=', `transcription:${id}`).execute()).toHaveLength(1);
      fs.writeFileSync(path.join(HISTORIES, 'transcription-completed.json'), historyToJSON(await handle(id).fetchHistory()) + '\n');
    } finally {
      await receiver.close();
    }
  });
});
