import fs from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { ActivityCancellationType, DeterminismViolationError } from '@temporalio/workflow';
import { START_IN_CALL, type GenerationOutcome } from '../../workflows/response.flow';
import { decodePayload, HistoryBuilder, type JsonHistory } from './history-builder';
import { useReplay, type Probe } from './replay-probes';

/**
 * Replays the real `responseWorkflow` (temporalWorkflow of response.flow.ts, workflows/temporal-context.ts) against
 * histories, offline, in Core's replay worker. Replay checks the commands the workflow emits (activity
 * order, ids, types, cancel requests) against the history; the probe interceptors (replay-probe.interceptors.ts)
 * report what the workflow computed — each activity's input and options, and the returned status — because
 * replay itself never compares results.
 */
const FIXTURES = path.join(__dirname, 'fixtures', 'histories');

const { replay } = useReplay('resp_replay', 'switchyard-replay');

const input = { responseId: 'resp_replay' };
const generated = (output: unknown[], tokens = { input: 3, output: 2 }): GenerationOutcome => ({
  kind: 'generated',
  status: 'completed',
  output,
  inputTokens: tokens.input,
  outputTokens: tokens.output,
  nextSequence: 7,
});
const messageOutput = generated([
  {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: 'hello world' }],
  },
]);
const EXECUTION_FAILED: GenerationOutcome = {
  kind: 'failed',
  code: 'response.execution_failed',
  message: 'The generation could not be completed; retry the request.',
  inputTokens: 0,
  outputTokens: 0,
};

const start = () => new HistoryBuilder().started('responseWorkflow', [input]).workflowTask();

/** Happy path up to (and including) the workflow task after finalizeResponse. */
function completedHistory(outcome: GenerationOutcome, final: { status: string; webhook: boolean }) {
  const history = start()
    .activity('startResponse', { proceed: true })
    .workflowTask()
    .activity('callProvider', outcome)
    .workflowTask()
    .activity('finalizeResponse', final)
    .workflowTask();
  if (final.webhook) history.activity('sendWebhook', undefined).workflowTask();
  return history.completed(final.status).build();
}

/** `activityType` scheduled and failed after its last retry, then the Response finalised failed and its webhook sent. */
function failedStep(history: HistoryBuilder, activityType: string): HistoryBuilder {
  const step = history.scheduleActivity(activityType);
  return history
    .failActivity(step, { message: 'connect ECONNREFUSED 10.0.0.1:443', type: 'Error' })
    .workflowTask()
    .activity('finalizeResponse', { status: 'failed', webhook: true })
    .workflowTask()
    .activity('sendWebhook', undefined)
    .workflowTask()
    .completed('failed');
}

const types = (probe: Probe) => probe.activities.map((activity) => activity.type);
const finalizeInput = (probe: Probe) =>
  probe.activities.find((activity) => activity.type === 'finalizeResponse')?.args[0];

describe('responseWorkflow replay: hand-built histories', () => {
  it('completed with a webhook: start → generate → finalise → webhook, returns the final status', async () => {
    const probe = await replay(completedHistory(messageOutput, { status: 'completed', webhook: true }));
    expect(types(probe)).toEqual(['startResponse', 'callProvider', 'finalizeResponse', 'sendWebhook']);
    for (const activity of probe.activities) expect(activity.args[0]).toMatchObject(input);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome: messageOutput });
    expect(probe.results).toEqual(['completed']);
  });

  it('completed without a webhook: no sendWebhook', async () => {
    const outcome: GenerationOutcome = {
      ...messageOutput,
      status: 'incomplete',
      incompleteReason: 'max_output_tokens',
    } as GenerationOutcome;
    const probe = await replay(completedHistory(outcome, { status: 'incomplete', webhook: false }));
    expect(types(probe)).toEqual(['startResponse', 'callProvider', 'finalizeResponse']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome });
    expect(probe.results).toEqual(['incomplete']);
  });

  it('schedules the provider call with WAIT_CANCELLATION_COMPLETED, a heartbeat timeout and few attempts', async () => {
    const probe = await replay(completedHistory(messageOutput, { status: 'completed', webhook: true }));
    const byType = Object.fromEntries(probe.activities.map((activity) => [activity.type, activity.options]));
    // Set explicitly: the SDK's effective default is TRY_CANCEL.
    expect(byType.callProvider).toMatchObject({
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      heartbeatTimeout: '10 seconds',
      retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['ProviderError'] },
    });
    for (const bookkeeping of ['startResponse', 'finalizeResponse', 'sendWebhook']) {
      expect(byType[bookkeeping]).toMatchObject({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });
      expect(byType[bookkeeping].heartbeatTimeout).toBeUndefined();
    }
  });

  it('function call: the output with a function_call item is finalised as generated', async () => {
    const outcome = generated(
      [
        {
          id: 'fc_1',
          type: 'function_call',
          call_id: 'call_1',
          name: 'get_weather',
          arguments: '{"city":"Paris"}',
          status: 'completed',
        },
      ],
      { input: 4, output: 2 },
    );
    const probe = await replay(completedHistory(outcome, { status: 'completed', webhook: false }));
    expect(types(probe)).toEqual(['startResponse', 'callProvider', 'finalizeResponse']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome });
    expect(probe.results).toEqual(['completed']);
  });

  it('failed: a vendor failure returned by callProvider is finalised as is', async () => {
    const outcome: GenerationOutcome = {
      kind: 'failed',
      code: 'provider.server_error',
      message: 'dev-echo: simulated server failure',
      inputTokens: 0,
      outputTokens: 0,
    };
    const probe = await replay(completedHistory(outcome, { status: 'failed', webhook: false }));
    expect(types(probe)).toEqual(['startResponse', 'callProvider', 'finalizeResponse']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome });
    expect(probe.results).toEqual(['failed']);
  });

  it('activity failure after the last retry: finalised as response.execution_failed, webhook still sent', async () => {
    const history = start().activity('startResponse', { proceed: true }).workflowTask();
    const probe = await replay(failedStep(history, 'callProvider').build());
    expect(types(probe)).toEqual(['startResponse', 'callProvider', 'finalizeResponse', 'sendWebhook']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome: EXECUTION_FAILED });
    expect(probe.results).toEqual(['failed']);
  });

  it('start-in-call: the start and the vendor call in one step, its outcome finalised', async () => {
    const history = start()
      .patch(START_IN_CALL)
      .activity('startAndCallProvider', { start: { proceed: true }, outcome: messageOutput })
      .workflowTask()
      .activity('finalizeResponse', { status: 'completed', webhook: false })
      .workflowTask()
      .completed('completed');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['startAndCallProvider', 'finalizeResponse']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome: messageOutput });
    expect(probe.results).toEqual(['completed']);
  });

  it("start-in-call: a step that fails after its retries is the job's failure, ended by endResponseFailed", async () => {
    const probe = await replay(failedStep(start().patch(START_IN_CALL), 'startAndCallProvider').build());
    expect(types(probe)).toEqual(['startAndCallProvider', 'finalizeResponse', 'sendWebhook']);
    expect(finalizeInput(probe)).toEqual({
      ...input,
      outcome: {
        kind: 'failed',
        code: 'response.execution_failed',
        message: 'The Response could not be processed; retry the request.',
        inputTokens: 0,
        outputTokens: 0,
      },
    });
    expect(probe.results).toEqual(['failed']);
  });

  it('cancel during callProvider: requests cancellation, waits for ActivityTaskCanceled, finalises as cancelled', async () => {
    const history = start().activity('startResponse', { proceed: true }).workflowTask();
    const call = history.scheduleActivity('callProvider');
    history
      .signal('cancel')
      .workflowTask()
      .cancelRequested(call)
      .activityCancelled(call)
      .workflowTask()
      .activity('finalizeResponse', { status: 'cancelled', webhook: true })
      .workflowTask()
      // Finalisation and the webhook run shielded: the cancel does not stop them.
      .activity('sendWebhook', undefined)
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['startResponse', 'callProvider', 'finalizeResponse', 'sendWebhook']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome: { kind: 'cancelled' } });
    expect(probe.results).toEqual(['cancelled']);
  });

  it('WorkflowHandle.cancel() (ops) during callProvider also ends in a finalised, cancelled Response', async () => {
    const history = start().activity('startResponse', { proceed: true }).workflowTask();
    const call = history.scheduleActivity('callProvider');
    history
      .workflowCancelRequested()
      .workflowTask()
      .cancelRequested(call)
      .activityCancelled(call)
      .workflowTask()
      .activity('finalizeResponse', { status: 'cancelled', webhook: false })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['startResponse', 'callProvider', 'finalizeResponse']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome: { kind: 'cancelled' } });
    expect(probe.results).toEqual(['cancelled']);
  });

  it('a repeated cancel signal is harmless (one cancel request)', async () => {
    const history = start().activity('startResponse', { proceed: true }).workflowTask();
    const call = history.scheduleActivity('callProvider');
    history
      .signal('cancel', ['user'])
      .workflowTask()
      .cancelRequested(call)
      .signal('cancel', ['user'])
      .workflowTask()
      .activityCancelled(call)
      .workflowTask()
      .activity('finalizeResponse', { status: 'cancelled', webhook: false })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(finalizeInput(probe)).toEqual({ ...input, outcome: { kind: 'cancelled' } });
    expect(probe.results).toEqual(['cancelled']);
  });

  it('cancel before the first workflow task: startResponse is skipped, only finalisation runs', async () => {
    // The signal is buffered and delivered as soon as the handler is set, before the flow's first check.
    const history = new HistoryBuilder()
      .started('responseWorkflow', [input])
      .signal('cancel')
      .workflowTask()
      .activity('finalizeResponse', { status: 'cancelled', webhook: false })
      .workflowTask()
      .completed('cancelled');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['finalizeResponse']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome: { kind: 'cancelled' } });
    expect(probe.results).toEqual(['cancelled']);
  });

  it.each([
    ['refuses (the row was already cancelled)', { proceed: false }],
    ['proceeds (the row moved to in_progress first)', { proceed: true }],
  ])(
    'cancel while startResponse runs and it %s: startResponse is not interrupted, no provider call',
    async (_name, startResult) => {
      const history = start();
      const started = history.scheduleActivity('startResponse');
      history
        .signal('cancel')
        .workflowTask() // no command: startResponse is non-cancellable, the generation scope has nothing running yet
        .completeActivity(started, startResult)
        .workflowTask()
        .activity('finalizeResponse', { status: 'cancelled', webhook: false })
        .workflowTask()
        .completed('cancelled');
      const probe = await replay(history.build());
      expect(types(probe)).toEqual(['startResponse', 'finalizeResponse']);
      expect(finalizeInput(probe)).toEqual({ ...input, outcome: { kind: 'cancelled' } });
      expect(probe.results).toEqual(['cancelled']);
    },
  );

  it('startResponse refuses without a cancel signal (finished elsewhere): finalisation reports the stored status', async () => {
    const history = start()
      .activity('startResponse', { proceed: false })
      .workflowTask()
      .activity('finalizeResponse', { status: 'completed', webhook: false })
      .workflowTask()
      .completed('completed');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['startResponse', 'finalizeResponse']);
    expect(finalizeInput(probe)).toEqual({ ...input, outcome: { kind: 'cancelled' } });
    expect(probe.results).toEqual(['completed']);
  });

  it('replays a history that stops mid-flight (worker restart while the provider call runs)', async () => {
    const history = start().activity('startResponse', { proceed: true }).workflowTask();
    history.scheduleActivity('callProvider');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual(['startResponse', 'callProvider']);
    expect(probe.results).toEqual([]);
  });
});

describe('responseWorkflow replay: the SwitchyardStatus search attribute', () => {
  /** A workflow the Temporal engine started with SwitchyardStatus (src/engine/search-attributes.ts). */
  const indexed = (withUpserts: boolean) => {
    const history = new HistoryBuilder()
      .started('responseWorkflow', [input], 'resp_replay', { searchAttributes: { SwitchyardStatus: 'queued' } })
      .workflowTask();
    history.activity('startResponse', { proceed: true }).workflowTask();
    if (withUpserts) history.upsertSearchAttributes({ SwitchyardStatus: 'in_progress' });
    history
      .activity('callProvider', messageOutput)
      .workflowTask()
      .activity('finalizeResponse', { status: 'completed', webhook: true })
      .workflowTask();
    if (withUpserts) history.upsertSearchAttributes({ SwitchyardStatus: 'completed' });
    return history.activity('sendWebhook', undefined).workflowTask().completed('completed').build();
  };

  it('a workflow started with it upserts each status it reaches: in_progress before the vendor call, the final one before the webhook', async () => {
    const probe = await replay(indexed(true));
    expect(types(probe)).toEqual(['startResponse', 'callProvider', 'finalizeResponse', 'sendWebhook']);
    expect(probe.results).toEqual(['completed']);
  });

  it('a workflow started without it (before the attribute existed, or on a namespace that refused it) upserts nothing', async () => {
    // Every other history in this file starts without search attributes and replays with no upsert.
    const probe = await replay(completedHistory(messageOutput, { status: 'completed', webhook: true }));
    expect(probe.results).toEqual(['completed']);
  });

  it('a history that started with it but lacks the upserts does not replay', async () => {
    const error = await replay(indexed(false)).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(DeterminismViolationError);
    expect((error as Error).message).toMatch(/UpsertWorkflowSearchAttributes|upsert/i);
  });
});

describe('responseWorkflow replay: histories the workflow must reject', () => {
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

  it('swapped activity order', async () => {
    const history = start()
      .activity('callProvider', messageOutput)
      .workflowTask()
      .activity('startResponse', { proceed: true })
      .workflowTask()
      .activity('finalizeResponse', { status: 'completed', webhook: false })
      .workflowTask()
      .completed('completed');
    await expectNondeterminism(
      history.build(),
      /Activity type of scheduled event 'callProvider' does not match activity type of activity command 'startResponse'/,
    );
  });

  it('a renamed activity', async () => {
    const history = completedHistory(messageOutput, { status: 'completed', webhook: false });
    const scheduled = history.events.find(
      (event) => (event.activityTaskScheduledEventAttributes as any)?.activityType.name === 'callProvider',
    )!;
    (scheduled.activityTaskScheduledEventAttributes as any).activityType.name = 'callModel';
    await expectNondeterminism(history, /'callModel' does not match activity type of activity command 'callProvider'/);
  });

  it('a missing webhook: finalisation said webhook=true but the history completes', async () => {
    const history = start()
      .activity('startResponse', { proceed: true })
      .workflowTask()
      .activity('callProvider', messageOutput)
      .workflowTask()
      .activity('finalizeResponse', { status: 'completed', webhook: true })
      .workflowTask()
      .completed('completed');
    await expectNondeterminism(
      history.build(),
      /Activity machine does not handle this event: HistoryEvent\(id: \d+, WorkflowExecutionCompleted\)/,
    );
  });

  it('a TRY_CANCEL-shaped history: finalising before the provider call acknowledged the cancel', async () => {
    const history = start().activity('startResponse', { proceed: true }).workflowTask();
    const call = history.scheduleActivity('callProvider');
    history
      .signal('cancel')
      .workflowTask()
      .cancelRequested(call)
      .workflowTask() // a TRY_CANCEL workflow would resolve at once and schedule finalisation here
      .activity('finalizeResponse', { status: 'cancelled', webhook: false })
      .workflowTask()
      .completed('cancelled');
    await expectNondeterminism(
      history.build(),
      /No command scheduled for event HistoryEvent\(id: \d+, ActivityTaskScheduled\)/,
    );
  });

  it('a cancel request for startResponse (it must be shielded)', async () => {
    const history = start();
    const started = history.scheduleActivity('startResponse');
    history
      .signal('cancel')
      .workflowTask()
      .cancelRequested(started)
      .completeActivity(started, { proceed: false })
      .workflowTask()
      .activity('finalizeResponse', { status: 'cancelled', webhook: false })
      .workflowTask()
      .completed('cancelled');
    await expectNondeterminism(
      history.build(),
      /No command scheduled for event HistoryEvent\(id: \d+, ActivityTaskCancelRequested\)/,
    );
  });
});

const fixtureFiles = fs.existsSync(FIXTURES)
  ? fs
      .readdirSync(FIXTURES)
      .filter((file) => file.endsWith('.json'))
      .sort()
  : [];

/**
 * Histories recorded by the opt-in real-server suites (test/temporal-server/), replayed on every run: every
 * workflow type (the history names it), Responses' and Runs' (`run-*.json`) alike.
 */
(fixtureFiles.length > 0 ? describe : describe.skip)('workflow replay: recorded histories', () => {
  it.each(fixtureFiles)('%s replays and returns the recorded result', async (file) => {
    const json = JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8'));
    const history = historyFromJSON(json);
    const workflowId = `fixture_${path.basename(file, '.json')}`;
    const probe = await replay(history, workflowId);
    const completed = json.events.find((event: any) => event.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
    if (completed) {
      expect(probe.results).toEqual([
        decodePayload(completed.workflowExecutionCompletedEventAttributes.result.payloads[0]),
      ]);
    }
    const scheduled = json.events
      .filter((event: any) => event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')
      .map((event: any) => event.activityTaskScheduledEventAttributes.activityType.name);
    expect(types(probe)).toEqual(scheduled);
  });
});
