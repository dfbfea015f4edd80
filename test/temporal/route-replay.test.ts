import type { GenerationOutcome } from '../../workflows/response.flow';
import { HistoryBuilder } from './history-builder';
import { useReplay, type Probe } from './replay-probes';

/**
 * A Response to a route on Temporal (api-decisions 32): the plan's draw is an activity's result and each failover an
 * activity's outcome, so a replay reads both from the history: it schedules the same targets in the same order, and
 * never draws again.
 */
const { replay } = useReplay('resp_route_replay', 'switchyard-route-replay');

const input = { responseId: 'resp_route_replay' };
const plan = { targets: ['gpt-5-mini', 'claude-haiku-4-5', 'dev-echo'], draw: 0.42 };
const served: GenerationOutcome = {
  kind: 'generated',
  model: 'claude-haiku-4-5',
  status: 'completed',
  output: [],
  inputTokens: 3,
  outputTokens: 2,
  nextSequence: 7,
};
const scheduled = (probe: Probe) => probe.activities.map((activity) => [activity.type, activity.args[0]]);

describe('responseWorkflow replay: a route', () => {
  it('replays the plan and the failover from the history: the same targets, in order, the serving one finalised', async () => {
    const history = new HistoryBuilder()
      .started('responseWorkflow', [input])
      .workflowTask()
      .activity('startResponse', { proceed: true, route: true })
      .workflowTask()
      .activity('planRoute', plan)
      .workflowTask()
      .activity('callProvider', { kind: 'failover', model: 'gpt-5-mini', reason: 'server' })
      .workflowTask()
      .activity('callProvider', served)
      .workflowTask()
      .activity('finalizeResponse', { status: 'completed', webhook: false })
      .workflowTask()
      .completed('completed')
      .build();
    const probe = await replay(history);
    expect(scheduled(probe)).toEqual([
      ['startResponse', input],
      ['planRoute', input],
      ['callProvider', { ...input, target: { model: 'gpt-5-mini', next: 'claude-haiku-4-5' } }],
      ['callProvider', { ...input, target: { model: 'claude-haiku-4-5', next: 'dev-echo' } }],
      ['finalizeResponse', { ...input, outcome: served }],
    ]);
    expect(probe.results).toEqual(['completed']);
  });

  it('calls the last target without a next one (it gets the usual retries)', async () => {
    const last: GenerationOutcome = { ...served, model: 'dev-echo' };
    const history = new HistoryBuilder()
      .started('responseWorkflow', [input])
      .workflowTask()
      .activity('startResponse', { proceed: true, route: true })
      .workflowTask()
      .activity('planRoute', { targets: ['gpt-5-mini', 'dev-echo'], draw: 0.9 })
      .workflowTask()
      .activity('callProvider', { kind: 'failover', model: 'gpt-5-mini', reason: 'rate_limit' })
      .workflowTask()
      .activity('callProvider', last)
      .workflowTask()
      .activity('finalizeResponse', { status: 'completed', webhook: false })
      .workflowTask()
      .completed('completed')
      .build();
    const probe = await replay(history);
    expect(probe.activities[3].args[0]).toEqual({ ...input, target: { model: 'dev-echo' } });
  });
});
