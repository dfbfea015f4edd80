import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, type Activities } from '../../src/engine/job-kinds';
import type { TranscriptionJobInput, TranscriptionOutcome } from '../../workflows/transcription.flow';
import type { RouteFailover } from '../../workflows/route-steps';
import { MP4_HEAD, postTranscription, toneWav } from '../audio/audio-fixtures';
import { useTestApp } from '../support/harness';
import { startReceiver } from '../webhooks/receiver';
import { quietLogger } from './workflow-bundle';

/**
 * The real transcription activities (src/audio/transcription.activities.ts) inside Temporal's
 * MockActivityEnvironment, against the real database of a TestApp whose own engine is stopped: submissions
 * over HTTP leave their job rows pending, and only these calls run them.
 */
describe('transcription activities under MockActivityEnvironment', () => {
  const suite = useTestApp();
  let activities: Activities;

  beforeAll(async () => {
    await suite.app.runtime.deps.engine.stop();
    const { db, logger, events, webhooks, catalog, providers, ledger } = suite.app.runtime.deps;
    activities = createActivities({
      db,
      logger,
      events,
      webhooks,
      catalog,
      providers,
      ledger,
      heartbeatIntervalMs: 20,
    });
  });

  const environment = (activityType: string) =>
    new MockActivityEnvironment({ activityType, heartbeatTimeoutMs: 20_000 }, { logger: quietLogger });
  const row = (id: string) =>
    suite.app.db.selectFrom('transcriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const debits = (id: string) =>
    suite.app.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('operation_key', '=', `transcription:${id}`)
      .execute();

  async function submit(fields: Record<string, string>): Promise<TranscriptionJobInput> {
    const reply = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: toneWav(2, [[0.5, 1.5]]), name: 'tones.wav' },
      { model: 'dev-stt-async', ...fields },
    );
    expect(reply.body.status).toBe('queued');
    expect(
      await suite.app.db
        .selectFrom('jobs')
        .select(['kind', 'status'])
        .where('id', '=', reply.body.request_id)
        .executeTakeFirst(),
    ).toEqual({ kind: 'transcription', status: 'pending' });
    return { transcriptionId: reply.body.request_id };
  }

  it('start → transcribe → finalize twice (billed once, upload deleted) → callback at most once', async () => {
    const receiver = await startReceiver();
    try {
      const input = await submit({ callback_url: `${receiver.url}/cb` });
      expect(await environment('startTranscription').run(activities.startTranscription, input)).toEqual({
        proceed: true,
        status: 'processing',
        callback: false,
      });
      // A re-run finds it processing.
      expect(await environment('startTranscription').run(activities.startTranscription, input)).toMatchObject({
        proceed: true,
      });

      // A model's transcription (no route): never a failover.
      const outcome = (await environment('transcribeAudio').run<
        [typeof input],
        TranscriptionOutcome | RouteFailover,
        typeof activities.transcribeAudio
      >(activities.transcribeAudio, input)) as TranscriptionOutcome;
      expect(outcome).toMatchObject({
        kind: 'completed',
        seconds: 2,
        result: { duration: 2, segments: [{ start: 0.5, end: 1.5 }] },
      });

      const first = await environment('finalizeTranscription').run(activities.finalizeTranscription, {
        ...input,
        outcome,
      });
      expect(first).toEqual({ proceed: false, status: 'completed', callback: true });
      const again = await environment('finalizeTranscription').run(activities.finalizeTranscription, {
        ...input,
        outcome,
      });
      expect(again).toEqual(first);
      expect(await debits(input.transcriptionId)).toHaveLength(1);
      expect((await row(input.transcriptionId)).cost).toBe(2);
      expect(
        await suite.app.db
          .selectFrom('transcription_chunks')
          .select('seq')
          .where('transcription_id', '=', input.transcriptionId)
          .execute(),
      ).toEqual([]);

      await environment('sendTranscriptionCallback').run(activities.sendTranscriptionCallback, input);
      await environment('sendTranscriptionCallback').run(activities.sendTranscriptionCallback, input);
      // The activity claims the callback; the process's webhook dispatcher sends it.
      await suite.app.runtime.deps.webhooks.idle();
      expect(receiver.requests).toHaveLength(1);
      expect(JSON.parse(receiver.requests[0]!.body)).toMatchObject({
        request_id: input.transcriptionId,
        status: 'completed',
      });
    } finally {
      await receiver.close();
    }
  });

  it('a long call heartbeats, and a cancellation from Temporal aborts it (to run again, not failed); a vendor refusal is a failed outcome, billed nothing', async () => {
    const slow = await submit({ prompt: '/delay 30000' });
    await environment('startTranscription').run(activities.startTranscription, slow);
    const cancelled = environment('transcribeAudio');
    const heartbeat = new Promise((resolve) => cancelled.once('heartbeat', resolve));
    const running = cancelled.run(activities.transcribeAudio, slow);
    // It heartbeats while the vendor works (Temporal delivers cancellation through heartbeats).
    await heartbeat;
    cancelled.cancel();
    await expect(running).rejects.toThrow();

    const mp4 = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: MP4_HEAD, name: 'x.m4a' },
      { model: 'dev-stt-async' },
    );
    const input = { transcriptionId: mp4.body.request_id as string };
    await environment('startTranscription').run(activities.startTranscription, input);
    // A model's transcription (no route): never a failover.
    const outcome = (await environment('transcribeAudio').run<
      [typeof input],
      TranscriptionOutcome | RouteFailover,
      typeof activities.transcribeAudio
    >(activities.transcribeAudio, input)) as TranscriptionOutcome;
    expect(outcome).toMatchObject({ kind: 'failed', code: 'transcription.invalid_request' });
    expect(
      await environment('finalizeTranscription').run(activities.finalizeTranscription, { ...input, outcome }),
    ).toMatchObject({ status: 'failed' });
    expect(await debits(input.transcriptionId)).toEqual([]);
  });
});
