import { TRANSCRIPTION_ROUTE_STEPS } from '../../workflows/transcription.flow';
import { HistoryBuilder } from './history-builder';
import { useReplay, type Probe } from './replay-probes';

const scheduled = (probe: Probe) => probe.activities.map((activity) => [activity.type, activity.args[0]]);

/** An asynchronous transcription on a route: its plan and failover are recorded steps too (TRANSCRIPTION_ROUTE_STEPS). */
const transcriptionReplay = useReplay('transcription/stt_route_replay', 'switchyard-transcription-route-replay');

describe('transcriptionWorkflow replay: a route', () => {
  it('replays the plan and the failover from the history, the serving target finalised', async () => {
    const stt = { transcriptionId: 'stt_route_replay' };
    const done = {
      kind: 'completed',
      result: { text: 'hello', segments: [], language: 'en', duration: 1 },
      seconds: 1,
      model: 'dev-stt-async',
    };
    const history = new HistoryBuilder()
      .started('transcriptionWorkflow', [stt], 'transcription/stt_route_replay')
      .workflowTask()
      .activity('startTranscription', { proceed: true, status: 'processing', callback: false, route: true })
      .workflowTask()
      .patch(TRANSCRIPTION_ROUTE_STEPS)
      .activity('planTranscriptionRoute', { targets: ['whisper-1-async', 'dev-stt-async'], draw: 0.1 })
      .workflowTask()
      .activity('transcribeAudio', { kind: 'failover', model: 'whisper-1-async', reason: 'server' })
      .workflowTask()
      .activity('transcribeAudio', done)
      .workflowTask()
      .activity('finalizeTranscription', { proceed: false, status: 'completed', callback: false })
      .workflowTask()
      .completed('completed')
      .build();
    const probe = await transcriptionReplay.replay(history);
    expect(scheduled(probe)).toEqual([
      ['startTranscription', stt],
      ['planTranscriptionRoute', stt],
      ['transcribeAudio', { ...stt, target: { model: 'whisper-1-async', next: 'dev-stt-async' } }],
      ['transcribeAudio', { ...stt, target: { model: 'dev-stt-async' } }],
      ['finalizeTranscription', { ...stt, outcome: done }],
    ]);
  });
});
