import { ActivityCancellationType, DeterminismViolationError } from '@temporalio/workflow';
import type { ModelOutcome, RunJobInput } from '../../workflows/run.flow';
import { HistoryBuilder, type JsonHistory } from './history-builder';
import { useReplay, type Probe } from './replay-probes';

/**
 * Replays the real `runWorkflow` (temporalWorkflow of run.flow.ts, with the FlowContext of
 * temporal-context.ts) against hand-built histories, offline, in Core's replay worker. Replay checks the
 * commands the workflow emits (activities in order with their ids and types, cancel requests, timers) against
 * the history; the probe interceptors (replay-probe.interceptors.ts) report what the workflow computed — each
 * activity's input and options, each timer's duration, the returned status — since replay compares none of them.
 *
 * A `requireAction` or `collectToolOutputs` result says how long the wait has left (`remainingMs`, by the
 * database's clock); the workflow's timer is that long, whatever the workflow time of the task that sees it.
 */
const { replay } = useReplay('run/run_replay', 'switchyard-run-replay');

const expectNondeterminism = (history: JsonHistory, message: RegExp) =>
  replay(history).then(
    () => {
      throw new Error('replay unexpectedly succeeded');
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(DeterminismViolationError);
      expect((error as Error).message).toMatch(message);
    },
  );

const input: RunJobInput = { runId: 'run_replay' };
/** The workers' default wait in requires_action (RUN_REQUIRES_ACTION_TIMEOUT_MS). */
const TIMEOUT_MS = 600_000;

const toolCalls: Extract<ModelOutcome, { kind: 'tool_calls' }> = {
  kind: 'tool_calls',
  calls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
  inputTokens: 5,
  outputTokens: 3,
};
const hello: ModelOutcome = {
  kind: 'message',
  status: 'completed',
  text: 'hello runs',
  inputTokens: 4,
  outputTokens: 2,
};
const answer: ModelOutcome = {
  kind: 'message',
  status: 'completed',
  text: 'Tool get_weather returned: sunny',
  inputTokens: 9,
  outputTokens: 5,
};
const CANCELLED = { kind: 'cancelled' } as const;

const start = () => new HistoryBuilder().started('runWorkflow', [input], 'run/run_replay').workflowTask();
const types = (probe: Probe) => probe.activities.map((activity) => activity.type);
const calls = (probe: Probe) => probe.activities.map((activity) => [activity.type, activity.args[0]]);

/**
 * start → round 0 asks for tools → requireAction answers waiting until `TIMEOUT_MS` after the workflow task that
 * sees it → that task starts the wait's timer (condition with a timeout). `remainingMs` sets how much of the
 * wait is left at that task (the timer's duration); `timerMs` writes another duration into TimerStarted.
 */
function waitingHistory(options: { remainingMs?: number; timerMs?: number } = {}) {
  const remainingMs = options.remainingMs ?? TIMEOUT_MS;
  const history = start()
    .activity('startRun', { proceed: true })
    .workflowTask()
    .activity('callModel', toolCalls)
    .workflowTask();
  const requireAction = history.scheduleActivity('requireAction');
  history.completeActivity(requireAction, { state: 'waiting', remainingMs }).workflowTask();
  const timer = history.startTimer(options.timerMs ?? remainingMs);
  return { history, timer, remainingMs };
}

/** After the wait: round 1 answers, finalisation, completed. */
const answerAndComplete = (history: HistoryBuilder) =>
  history
    .activity('callModel', answer)
    .workflowTask()
    .activity('finalizeRun', { status: 'completed' })
    .workflowTask()
    .completed('completed');

describe('runWorkflow replay: hand-built histories', () => {
  it('completed: startRun → callModel (a message) → finalizeRun, returns the final status', async () => {
    const history = start()
      .activity('startRun', { proceed: true })
      .workflowTask()
      .activity('callModel', hello)
      .workflowTask()
      .activity('finalizeRun', { status: 'completed' })
      .workflowTask()
      .completed('completed');
    const probe = await replay(history.build());
    expect(calls(probe)).toEqual([
      ['startRun', input],
      ['callModel', { ...input, round: 0 }],
      ['finalizeRun', { ...input, round: 0, ending: hello }],
    ]);
    expect(probe.timers).toEqual([]);
    expect(probe.results).toEqual(['completed']);
  });

  it('schedules callModel with WAIT_CANCELLATION_COMPLETED, a heartbeat timeout and few attempts; bookkeeping with many short ones', async () => {
    const { history, timer } = waitingHistory();
    history
      .signal('submit_tool_outputs')
      .workflowTask()
      .cancelTimer(timer)
      .activity('collectToolOutputs', { state: 'submitted' })
      .workflowTask();
    const probe = await replay(answerAndComplete(history).build());
    const options = (type: string) =>
      probe.activities.filter((activity) => activity.type === type).map((activity) => activity.options);
    const callModel = options('callModel');
    expect(callModel).toHaveLength(2);
    for (const each of callModel) {
      // Set explicitly: the SDK's effective default is TRY_CANCEL.
      expect(each).toEqual({
        startToCloseTimeout: '30 minutes',
        heartbeatTimeout: '10 seconds',
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        retry: {
          initialInterval: '1 second',
          backoffCoefficient: 2,
          maximumAttempts: 3,
          nonRetryableErrorTypes: ['ProviderError'],
        },
      });
    }
    for (const type of ['startRun', 'requireAction', 'collectToolOutputs', 'finalizeRun']) {
      expect(options(type)).toEqual([
        {
          startToCloseTimeout: '1 minute',
          retry: {
            initialInterval: '1 second',
            backoffCoefficient: 2,
            maximumInterval: '30 seconds',
            maximumAttempts: 20,
          },
        },
      ]);
    }
  });

  it('cancelled: a cancel signal while callModel runs → cancel requested, waits for ActivityTaskCanceled, finalised cancelled', async () => {
    const history = start().activity('startRun', { proceed: true }).workflowTask();
    const call = history.scheduleActivity('callModel');
    history
      .signal('cancel')
      .workflowTask()
      .cancelRequested(call)
      .activityCancelled(call)
      .workflowTask()
      .activity('finalizeRun', { status: 'cancelled' })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(calls(probe)).toEqual([
      ['startRun', input],
      ['callModel', { ...input, round: 0 }],
      ['finalizeRun', { ...input, round: 0, ending: CANCELLED }],
    ]);
    expect(probe.results).toEqual(['cancelled']);
  });

  it('requires_action → submit_tool_outputs → completed: the signal cancels the wait timer, round 1 answers', async () => {
    const { history, timer } = waitingHistory();
    history
      .signal('submit_tool_outputs')
      .workflowTask() // CancelTimer, then collectToolOutputs
      .cancelTimer(timer)
      .activity('collectToolOutputs', { state: 'submitted' })
      .workflowTask();
    const probe = await replay(answerAndComplete(history).build());
    expect(calls(probe)).toEqual([
      ['startRun', input],
      ['callModel', { ...input, round: 0 }],
      ['requireAction', { ...input, round: 0, outcome: toolCalls }],
      ['collectToolOutputs', { ...input, round: 0 }],
      ['callModel', { ...input, round: 1 }],
      ['finalizeRun', { ...input, round: 1, ending: answer }],
    ]);
    // condition(…, remainingMs): the whole wait, as the activity measured it.
    expect(probe.timers).toEqual([{ seq: 1, durationMs: TIMEOUT_MS }]);
    expect(probe.results).toEqual(['completed']);
  });

  it('expired: the wait timer fires → collectToolOutputs says expired → finalised expired after round 0', async () => {
    const { history, timer } = waitingHistory();
    history
      .fireTimer(timer)
      .workflowTask()
      .activity('collectToolOutputs', { state: 'expired' })
      .workflowTask()
      .activity('finalizeRun', { status: 'expired' })
      .workflowTask()
      .completed('expired');
    const probe = await replay(history.build());
    expect(calls(probe)).toEqual([
      ['startRun', input],
      ['callModel', { ...input, round: 0 }],
      ['requireAction', { ...input, round: 0, outcome: toolCalls }],
      ['collectToolOutputs', { ...input, round: 0 }],
      // The round is billed by requireAction: the ending carries no tokens, the round counter moves past it.
      ['finalizeRun', { ...input, round: 1, ending: { kind: 'expired' } }],
    ]);
    expect(probe.timers).toEqual([{ seq: 1, durationMs: TIMEOUT_MS }]);
    expect(probe.results).toEqual(['expired']);
  });

  it('cancel while waiting in requires_action: the timer is cancelled, finalised cancelled after round 0', async () => {
    const { history, timer } = waitingHistory();
    history
      .signal('cancel')
      .workflowTask()
      .cancelTimer(timer)
      .activity('finalizeRun', { status: 'cancelled' })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['startRun', 'callModel', 'requireAction', 'finalizeRun']);
    expect(probe.activities.at(-1)!.args[0]).toEqual({ ...input, round: 1, ending: CANCELLED });
    expect(probe.results).toEqual(['cancelled']);
  });

  it('submit_tool_outputs arriving while requireAction runs: no timer, the outputs are collected at once', async () => {
    const history = start()
      .activity('startRun', { proceed: true })
      .workflowTask()
      .activity('callModel', toolCalls)
      .workflowTask();
    const requireAction = history.scheduleActivity('requireAction');
    history
      .signal('submit_tool_outputs')
      .workflowTask() // no command: requireAction is still running
      .completeActivity(requireAction, { state: 'waiting', remainingMs: TIMEOUT_MS })
      .workflowTask()
      .activity('collectToolOutputs', { state: 'submitted' })
      .workflowTask();
    const probe = await replay(answerAndComplete(history).build());
    expect(types(probe)).toEqual([
      'startRun',
      'callModel',
      'requireAction',
      'collectToolOutputs',
      'callModel',
      'finalizeRun',
    ]);
    expect(probe.timers).toEqual([]);
    expect(probe.results).toEqual(['completed']);
  });

  it('a wake-up that finds the Run still waiting (a signal without stored outputs) waits again, with a new timer for the rest', async () => {
    const { history, timer } = waitingHistory();
    history.advance(60_000).signal('submit_tool_outputs').workflowTask().cancelTimer(timer);
    const collect = history.scheduleActivity('collectToolOutputs');
    // The activity answers what is left of the wait; the new timer is that long.
    const rest = TIMEOUT_MS - 60_000 - 5;
    history.completeActivity(collect, { state: 'waiting', remainingMs: rest }).workflowTask();
    const second = history.startTimer(rest);
    history
      .signal('submit_tool_outputs')
      .workflowTask()
      .cancelTimer(second)
      .activity('collectToolOutputs', { state: 'submitted' })
      .workflowTask();
    const probe = await replay(answerAndComplete(history).build());
    expect(types(probe)).toEqual([
      'startRun',
      'callModel',
      'requireAction',
      'collectToolOutputs',
      'collectToolOutputs',
      'callModel',
      'finalizeRun',
    ]);
    expect(probe.timers).toEqual([
      { seq: 1, durationMs: TIMEOUT_MS },
      { seq: 2, durationMs: rest },
    ]);
    expect(probe.results).toEqual(['completed']);
  });

  it('a wait the workflow sees with nothing left (a zero remainingMs): no timer, the wait is checked again at once', async () => {
    // The activities answer expired rather than a wait with nothing left; a zero is still handled without a timer.
    const history = start()
      .activity('startRun', { proceed: true })
      .workflowTask()
      .activity('callModel', toolCalls)
      .workflowTask();
    const requireAction = history.scheduleActivity('requireAction');
    history
      .completeActivity(requireAction, { state: 'waiting', remainingMs: 0 })
      .workflowTask()
      .activity('collectToolOutputs', { state: 'expired' })
      .workflowTask()
      .activity('finalizeRun', { status: 'expired' })
      .workflowTask()
      .completed('expired');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['startRun', 'callModel', 'requireAction', 'collectToolOutputs', 'finalizeRun']);
    expect(probe.timers).toEqual([]);
    expect(probe.results).toEqual(['expired']);
  });

  it('callModel failing after its last retry: finalised failed with run.execution_failed', async () => {
    const history = start().activity('startRun', { proceed: true }).workflowTask();
    const call = history.scheduleActivity('callModel');
    history
      .failActivity(call, { message: 'connect ECONNREFUSED 10.0.0.1:443', type: 'Error' })
      .workflowTask()
      .activity('finalizeRun', { status: 'failed' })
      .workflowTask()
      .completed('failed');
    const probe = await replay(history.build());
    expect(calls(probe).at(-1)).toEqual([
      'finalizeRun',
      {
        ...input,
        round: 0,
        ending: {
          kind: 'failed',
          code: 'run.execution_failed',
          message: 'The Run could not be completed; create it again.',
          inputTokens: 0,
          outputTokens: 0,
        },
      },
    ]);
    expect(probe.results).toEqual(['failed']);
  });

  it('startRun refusing (cancelled before it started): no vendor call, finalised cancelled', async () => {
    const history = start()
      .activity('startRun', { proceed: false })
      .workflowTask()
      .activity('finalizeRun', { status: 'cancelled' })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(calls(probe)).toEqual([
      ['startRun', input],
      ['finalizeRun', { ...input, round: 0, ending: CANCELLED }],
    ]);
    expect(probe.results).toEqual(['cancelled']);
  });

  it('a cancel before the first workflow task: startRun is skipped, only finalisation runs', async () => {
    const history = new HistoryBuilder()
      .started('runWorkflow', [input], 'run/run_replay')
      .signal('cancel')
      .workflowTask()
      .activity('finalizeRun', { status: 'cancelled' })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(calls(probe)).toEqual([['finalizeRun', { ...input, round: 0, ending: CANCELLED }]]);
    expect(probe.results).toEqual(['cancelled']);
  });

  it('replays a history that stops while the Run waits (worker restart in requires_action)', async () => {
    const { history } = waitingHistory();
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['startRun', 'callModel', 'requireAction']);
    expect(probe.timers).toEqual([{ seq: 1, durationMs: TIMEOUT_MS }]);
    expect(probe.results).toEqual([]);
  });

  it("a timer duration that differs from the workflow's is not a determinism error (Core compares the command, not its duration)", async () => {
    // The workflow computes a 10-minute wait; the history says 1 s. Replay accepts it: TimerStarted is matched by
    // command type only (sdk-core timer_state_machine.rs; a TimerFired is also matched by timer id). The probe
    // is what pins the duration down.
    const { history, timer } = waitingHistory({ timerMs: 1000 });
    history
      .fireTimer(timer)
      .workflowTask()
      .activity('collectToolOutputs', { state: 'expired' })
      .workflowTask()
      .activity('finalizeRun', { status: 'expired' })
      .workflowTask()
      .completed('expired');
    const built = history.build();
    expect(
      built.events.find((event) => event.eventType === 'EVENT_TYPE_TIMER_STARTED')?.timerStartedEventAttributes,
    ).toMatchObject({ startToFireTimeout: '1s' });
    const probe = await replay(built);
    expect(probe.timers).toEqual([{ seq: 1, durationMs: TIMEOUT_MS }]);
    expect(probe.results).toEqual(['expired']);
  });
});

describe('runWorkflow replay: WorkflowHandle.cancel() (Temporal UI, CLI, ops)', () => {
  it('during callModel: the cancel reaches the call, the Run is finalised cancelled', async () => {
    const history = start().activity('startRun', { proceed: true }).workflowTask();
    const call = history.scheduleActivity('callModel');
    history
      .workflowCancelRequested()
      .workflowTask()
      .cancelRequested(call)
      .activityCancelled(call)
      .workflowTask()
      .activity('finalizeRun', { status: 'cancelled' })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(calls(probe).at(-1)).toEqual(['finalizeRun', { ...input, round: 0, ending: CANCELLED }]);
    expect(probe.results).toEqual(['cancelled']);
  });

  // A cancel of the workflow itself (not our `cancel` signal) while it waits: the timer is cancelled and the Run
  // still finalised cancelled (temporalFlowContext turns the root scope's cancellation into a cancel request).
  it('while waiting in requires_action: the timer is cancelled and the Run finalised cancelled', async () => {
    const { history, timer } = waitingHistory();
    history
      .workflowCancelRequested()
      .workflowTask()
      .cancelTimer(timer)
      .activity('finalizeRun', { status: 'cancelled' })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(calls(probe).at(-1)).toEqual(['finalizeRun', { ...input, round: 1, ending: CANCELLED }]);
    expect(probe.results).toEqual(['cancelled']);
  });
});

describe('runWorkflow replay: histories the workflow must reject', () => {
  it('recorded activity types that differ from what the workflow schedules (a Responses-shaped history)', async () => {
    const history = start()
      .activity('startResponse', { proceed: true })
      .workflowTask()
      .activity('callProvider', hello)
      .workflowTask()
      .activity('finalizeResponse', { status: 'completed', webhook: false })
      .workflowTask()
      .completed('completed');
    await expectNondeterminism(
      history.build(),
      /Activity type of scheduled event 'startResponse' does not match activity type of activity command 'startRun'/,
    );
  });

  it('a renamed activity inside an otherwise valid Run history', async () => {
    const { history, timer } = waitingHistory();
    history
      .signal('submit_tool_outputs')
      .workflowTask()
      .cancelTimer(timer)
      .activity('collectOutputs', { state: 'submitted' })
      .workflowTask();
    await expectNondeterminism(
      answerAndComplete(history).build(),
      /'collectOutputs' does not match activity type of activity command 'collectToolOutputs'/,
    );
  });

  it('swapped activity order', async () => {
    const history = start()
      .activity('callModel', hello)
      .workflowTask()
      .activity('startRun', { proceed: true })
      .workflowTask()
      .activity('finalizeRun', { status: 'completed' })
      .workflowTask()
      .completed('completed');
    await expectNondeterminism(
      history.build(),
      /Activity type of scheduled event 'callModel' does not match activity type of activity command 'startRun'/,
    );
  });

  it('no timer in the history where the workflow waits in requires_action', async () => {
    const history = start()
      .activity('startRun', { proceed: true })
      .workflowTask()
      .activity('callModel', toolCalls)
      .workflowTask();
    const requireAction = history.scheduleActivity('requireAction');
    history
      .completeActivity(requireAction, { state: 'waiting', remainingMs: TIMEOUT_MS })
      .workflowTask()
      .activity('collectToolOutputs', { state: 'expired' })
      .workflowTask()
      .activity('finalizeRun', { status: 'expired' })
      .workflowTask()
      .completed('expired');
    await expectNondeterminism(
      history.build(),
      /Timer machine does not handle this event: HistoryEvent\(id: \d+, ActivityTaskScheduled\)/,
    );
  });

  it('a timer in the history where the workflow does not wait (nothing was left of the wait)', async () => {
    const history = start()
      .activity('startRun', { proceed: true })
      .workflowTask()
      .activity('callModel', toolCalls)
      .workflowTask();
    const requireAction = history.scheduleActivity('requireAction');
    history.completeActivity(requireAction, { state: 'waiting', remainingMs: 0 }).workflowTask();
    const timer = history.startTimer(1000);
    history
      .fireTimer(timer)
      .workflowTask()
      .activity('collectToolOutputs', { state: 'expired' })
      .workflowTask()
      .activity('finalizeRun', { status: 'expired' })
      .workflowTask()
      .completed('expired');
    await expectNondeterminism(
      history.build(),
      /Activity machine does not handle this event: HistoryEvent\(id: \d+, TimerStarted\)/,
    );
  });

  it('a wake-up that leaves the wait timer running (no TimerCanceled before collectToolOutputs)', async () => {
    const { history } = waitingHistory();
    history
      .signal('submit_tool_outputs')
      .workflowTask()
      .activity('collectToolOutputs', { state: 'submitted' })
      .workflowTask();
    await expectNondeterminism(
      answerAndComplete(history).build(),
      /Timer machine does not handle this event: HistoryEvent\(id: \d+, ActivityTaskScheduled\)/,
    );
  });

  it('a TimerFired for another timer id', async () => {
    const { history, timer } = waitingHistory();
    const built = history
      .fireTimer(timer)
      .workflowTask()
      .activity('collectToolOutputs', { state: 'expired' })
      .workflowTask()
      .activity('finalizeRun', { status: 'expired' })
      .workflowTask()
      .completed('expired')
      .build();
    const fired = built.events.find((event) => event.eventType === 'EVENT_TYPE_TIMER_FIRED')!;
    (fired.timerFiredEventAttributes as { timerId: string }).timerId = '7';
    await expectNondeterminism(built, /Timer fired event did not have expected timer id 1, it was 7/);
  });

  it('a TRY_CANCEL-shaped history: finalising before callModel acknowledged the cancel', async () => {
    const history = start().activity('startRun', { proceed: true }).workflowTask();
    const call = history.scheduleActivity('callModel');
    history
      .signal('cancel')
      .workflowTask()
      .cancelRequested(call)
      .workflowTask()
      .activity('finalizeRun', { status: 'cancelled' })
      .workflowTask()
      .completed('cancelled');
    await expectNondeterminism(
      history.build(),
      /No command scheduled for event HistoryEvent\(id: \d+, ActivityTaskScheduled\)/,
    );
  });
});
