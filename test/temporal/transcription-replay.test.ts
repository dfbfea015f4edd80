import { DeterminismViolationError } from '@temporalio/workflow';
import type { TranscriptionJobInput, TranscriptionOutcome } from '../../workflows/transcription.flow';
import { HistoryBuilder } from './history-builder';
import { useReplay, type Probe } from './replay-probes';

/**
 * Replays the real `transcriptionWorkflow` (temporalWorkflow of transcription.flow.ts, workflows/temporal-context.ts)
 * against hand-built histories, offline: the activities in order with their inputs and options, the status it
 * returns, and a history that does not match the code is rejected.
 */
const { replay } = useReplay('transcription/stt_replay', 'switchyard-transcription-replay');

const input: TranscriptionJobInput = { transcriptionId: 'stt_replay' };
const done: TranscriptionOutcome = {
  kind: 'completed',
  result: {
    text: 'hello',
    language: 'en',
    duration: 2.5,
    segments: [{ text: 'hello', start: 0.5, end: 2, speaker_id: null }],
  },
  seconds: 3,
};
const start = () =>
  new HistoryBuilder().started('transcriptionWorkflow', [input], 'transcription/stt_replay').workflowTask();
const calls = (probe: Probe) => probe.activities.map((activity) => [activity.type, activity.args[0]]);

describe('transcriptionWorkflow replay: hand-built histories', () => {
  it('completed with a callback: start → transcribe → finalize → callback, returns the final status', async () => {
    const history = start()
      .activity('startTranscription', { proceed: true, status: 'processing', callback: false })
      .workflowTask()
      .activity('transcribeAudio', done)
      .workflowTask()
      .activity('finalizeTranscription', { proceed: false, status: 'completed', callback: true })
      .workflowTask()
      .activity('sendTranscriptionCallback', null)
      .workflowTask()
      .completed('completed');
    const probe = await replay(history.build());
    expect(calls(probe)).toEqual([
      ['startTranscription', input],
      ['transcribeAudio', input],
      ['finalizeTranscription', { ...input, outcome: done }],
      ['sendTranscriptionCallback', input],
    ]);
    expect(probe.results).toEqual(['completed']);
    const options = Object.fromEntries(probe.activities.map((activity) => [activity.type, activity.options]));
    // The vendor call heartbeats and is retried a little; bookkeeping is short and retried long.
    expect(options.transcribeAudio).toMatchObject({
      heartbeatTimeout: '10 seconds',
      retry: { maximumAttempts: 2, nonRetryableErrorTypes: ['ProviderError'] },
    });
    expect(options.finalizeTranscription).toMatchObject({
      startToCloseTimeout: '1 minute',
      retry: { maximumAttempts: 20 },
    });
  });

  it('a job found final (a re-run after its finalisation) only completes its callback', async () => {
    const history = start()
      .activity('startTranscription', { proceed: false, status: 'failed', callback: true })
      .workflowTask()
      .activity('sendTranscriptionCallback', null)
      .workflowTask()
      .completed('failed');
    const probe = await replay(history.build());
    expect(calls(probe)).toEqual([
      ['startTranscription', input],
      ['sendTranscriptionCallback', input],
    ]);
    expect(probe.results).toEqual(['failed']);
  });

  it('a vendor call that outlived its retries ends the job failed, cleanly', async () => {
    const history = start()
      .activity('startTranscription', { proceed: true, status: 'processing', callback: false })
      .workflowTask();
    const id = history.scheduleActivity('transcribeAudio');
    history.failActivity(id, { message: 'database unreachable', type: 'Error', nonRetryable: false }).workflowTask();
    const failed: TranscriptionOutcome = {
      kind: 'failed',
      code: 'transcription.execution_failed',
      message: 'The transcription could not be completed; submit the file again.',
    };
    history
      .activity('finalizeTranscription', { proceed: false, status: 'failed', callback: false })
      .workflowTask()
      .completed('failed');
    const probe = await replay(history.build());
    expect(calls(probe)).toEqual([
      ['startTranscription', input],
      ['transcribeAudio', input],
      ['finalizeTranscription', { ...input, outcome: failed }],
    ]);
  });

  it('rejects a history whose activities the code does not schedule', async () => {
    const history = start().activity('transcribeAudio', done).workflowTask().completed('completed');
    await expect(replay(history.build())).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
