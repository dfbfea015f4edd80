import { RUN_ROUTE_STEPS, type ModelOutcome, type RunJobInput } from '../../workflows/run.flow';
import { HistoryBuilder } from './history-builder';
import { useReplay, type Probe } from './replay-probes';

/**
 * A Run on a route on Temporal (api-decisions 32): since RUN_ROUTE_STEPS the plan's draw is an activity's result and
 * each failover a callModel outcome, so a replay reads both from the history and schedules the same targets in the
 * same order; a Run from before the patch (no marker) replays its one callModel, which failed over within itself.
 */
const { replay } = useReplay('run/run_route_replay', 'switchyard-run-route-replay');

const input: RunJobInput = { runId: 'run_route_replay' };
const served: ModelOutcome = {
  kind: 'message',
  status: 'completed',
  text: 'from claude',
  inputTokens: 4,
  outputTokens: 2,
  model: 'claude-haiku-4-5',
};
const start = () =>
  new HistoryBuilder()
    .started('runWorkflow', [input], 'run/run_route_replay')
    .workflowTask()
    .activity('startRun', { proceed: true, route: true })
    .workflowTask();
const scheduled = (probe: Probe) => probe.activities.map((activity) => [activity.type, activity.args[0]]);

describe('runWorkflow replay: a route', () => {
  it('replays the plan and the failover from the history: the same targets, in order, the serving one finalised', async () => {
    const history = start()
      .patch(RUN_ROUTE_STEPS)
      .activity('planRunRoute', { targets: ['gpt-5-mini', 'claude-haiku-4-5', 'dev-echo'], draw: 0.42 })
      .workflowTask()
      .activity('callModel', { kind: 'failover', model: 'gpt-5-mini', reason: 'server' })
      .workflowTask()
      .activity('callModel', served)
      .workflowTask()
      .activity('finalizeRun', { status: 'completed' })
      .workflowTask()
      .completed('completed')
      .build();
    const probe = await replay(history);
    expect(scheduled(probe)).toEqual([
      ['startRun', input],
      ['planRunRoute', input],
      ['callModel', { ...input, round: 0, target: { model: 'gpt-5-mini', next: 'claude-haiku-4-5' } }],
      ['callModel', { ...input, round: 0, target: { model: 'claude-haiku-4-5', next: 'dev-echo' } }],
      ['finalizeRun', { ...input, round: 0, ending: served }],
    ]);
    expect(probe.results).toEqual(['completed']);
  });

  it('replays a Run on a route from before the patch as it ran: one callModel, no plan', async () => {
    const history = start()
      .activity('callModel', served)
      .workflowTask()
      .activity('finalizeRun', { status: 'completed' })
      .workflowTask()
      .completed('completed')
      .build();
    const probe = await replay(history);
    expect(scheduled(probe)).toEqual([
      ['startRun', input],
      ['callModel', { ...input, round: 0 }],
      ['finalizeRun', { ...input, round: 0, ending: served }],
    ]);
  });
});
