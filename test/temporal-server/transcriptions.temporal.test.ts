import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { workflowIdOf } from '../../src/engine/job-kind';
import { postTranscription, toneWav } from '../audio/audio-fixtures';
import { pollUntil } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { connectClient, describeOnTemporal } from './temporal-client';
import { startReceiver } from '../webhooks/receiver';

/**
 * Asynchronous transcriptions against a real Temporal server (`npm run test:temporal`), as runs.temporal.test.ts
 * does for Runs: TEST_TEMPORAL_ADDRESS. The API runs with the Temporal
 * engine and the production worker serves a task queue of its own. Histories are saved to
 * test/temporal/fixtures/histories/transcription-<scenario>.json for the offline replay tests.
 */
const HISTORIES = path.join(__dirname, '..', 'temporal', 'fixtures', 'histories');

describeOnTemporal('asynchronous transcriptions on a real Temporal server', () => {
  let client: Awaited<ReturnType<typeof connectClient>>;
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    client = await connectClient();
    app = await TestApp.start();
    expect(app.runtime.deps.engine.name).toBe('temporal');
    ({ key } = await app.createAccount());
    fs.mkdirSync(HISTORIES, { recursive: true });
  });

  afterAll(async () => {
    await app?.close();
    await client?.close();
  });

  const handle = (id: string) => client.workflow.getHandle(workflowIdOf({ kind: 'transcription', id }));

  it('queued → completed through the workflow, with result, meta, one callback and one debit; its history recorded', async () => {
    const receiver = await startReceiver();
    try {
      const submitted = await postTranscription(
        app.baseUrl,
        key,
        { bytes: toneWav(2, [[0.5, 1.5]]), name: 'tones.wav' },
        { model: 'dev-stt-async', meta: '{"k":"v"}', callback_url: `${receiver.url}/cb` },
      );
      expect(submitted.body.status).toBe('queued');
      const id = submitted.body.request_id as string;
      expect(await handle(id).result()).toBe('completed');
      const check = await pollUntil(
        () => app.request('GET', `/v2/audio/transcription/check/${id}`, { key }).then((reply) => reply.body),
        (body) => body.status === 'completed',
        10_000,
      );
      expect(check).toEqual({ request_id: id, status: 'completed' });
      const result = await app.request('GET', `/v2/audio/transcription/result/${id}`, { key });
      expect(result.body).toMatchObject({
        duration: 2,
        segments: [{ start: 0.5, end: 1.5 }],
        meta: { k: 'v' },
        usage: { cost: 2 },
      });
      expect(receiver.requests).toHaveLength(1);
      expect(
        await app.db
          .selectFrom('ledger_transactions')
          .select('id')
          .where('operation_key', '=', `transcription:${id}`)
          .execute(),
      ).toHaveLength(1);
      fs.writeFileSync(
        path.join(HISTORIES, 'transcription-completed.json'),
        historyToJSON(await handle(id).fetchHistory()) + '\n',
      );
    } finally {
      await receiver.close();
    }
  });
});
