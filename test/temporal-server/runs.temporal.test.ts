import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { workflowIdOf } from '../../src/engine/job-kind';
import { pollUntil } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { activitiesRan, connectClient, describeOnTemporal } from './temporal-client';

/**
 * Legacy Runs against a real Temporal server (`npm run test:temporal`), as responses.temporal.test.ts does for
 * Responses: TEST_TEMPORAL_ADDRESS. The API runs with the Temporal engine and the production worker (runTemporalWorker
 * with createActivities) serves a task queue of its own. A Run waits 5 s in requires_action
 * (RUN_REQUIRES_ACTION_TIMEOUT_MS), so expiry is quick. Each workflow's history is saved to
 * test/temporal/fixtures/histories/run-<scenario>.json, which the offline replay tests replay on every `npm test`.
 */
const HISTORIES = path.join(__dirname, '..', 'temporal', 'fixtures', 'histories');
const REQUIRES_ACTION_TIMEOUT_MS = 5000;

const FINAL = ['completed', 'incomplete', 'failed', 'cancelled', 'expired'];

describeOnTemporal('Runs on a real Temporal server', () => {
  let client: Awaited<ReturnType<typeof connectClient>>;
  let app: TestApp;
  let key: string;
  let assistantId: number;
  let toolAssistantId: number;

  beforeAll(async () => {
    client = await connectClient();
    app = await TestApp.start({
      env: {
        RUN_REQUIRES_ACTION_TIMEOUT_MS: String(REQUIRES_ACTION_TIMEOUT_MS),
      },
    });
    expect(app.runtime.deps.engine.name).toBe('temporal');
    ({ key } = await app.createAccount());
    assistantId = (
      await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'Echo', instructions: 'Answer briefly.' })
    ).body.id;
    const weatherTool = {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    };
    toolAssistantId = (
      await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'Weather', tools: [weatherTool] })
    ).body.id;
    fs.mkdirSync(HISTORIES, { recursive: true });
  });

  afterAll(async () => {
    await app?.close();
    await client?.close();
  });

  const call = (method: string, urlPath: string, body?: unknown) => app.request(method, urlPath, { key, body });
  // The workflow id carries the kind: `run/run_…` (engine/job-kind.ts).
  const handle = (id: string) => client.workflow.getHandle(workflowIdOf({ kind: 'run', id }));

  async function createRun(text: string, assistant = assistantId): Promise<{ threadId: string; runId: string }> {
    const thread = await call('POST', '/v2/threads', { messages: [{ role: 'user', content: text }] });
    expect(thread.status).toBe(200);
    const run = await call('POST', `/v2/threads/${thread.body.id}/runs`, { assistant_id: assistant });
    expect(run.status).toBe(200);
    return { threadId: thread.body.id, runId: run.body.id };
  }

  const getRun = async (threadId: string, runId: string) =>
    (await call('GET', `/v2/threads/${threadId}/runs/${runId}`)).body;
  const untilStatus = async (threadId: string, runId: string, status: string) => {
    const run = await pollUntil(
      () => getRun(threadId, runId),
      (current) => current.status === status || FINAL.includes(current.status),
      30_000,
    );
    if (run.status !== status)
      throw new Error(`run ${runId} is ${run.status} (${JSON.stringify(run.last_error)}), not ${status}`);
    return run;
  };
  const messagesOf = async (threadId: string) =>
    (await call('GET', `/v2/threads/${threadId}/messages?order=asc`)).body.data as Array<{
      role: string;
      content: Array<{ text: string }>;
    }>;
  const debitsOf = (runId: string, round: number) =>
    app.db
      .selectFrom('ledger_transactions')
      .select('id')
      .where('operation_key', '=', `run:${runId}:${round}`)
      .execute();

  /** Waits for the workflow, checks it ended as the Run did, and stores its history as a replay fixture. */
  async function recordHistory(runId: string, scenario: string): Promise<string> {
    const result = await handle(runId).result();
    const history = await handle(runId).fetchHistory();
    fs.writeFileSync(path.join(HISTORIES, `run-${scenario}.json`), historyToJSON(history) + '\n');
    const row = await app.db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirstOrThrow();
    expect(result).toBe(row.status);
    return result;
  }

  /** The history's events in the JSON form (event type names, signal names, activity types). */
  const eventsOf = async (runId: string): Promise<Array<Record<string, any>>> =>
    JSON.parse(historyToJSON(await handle(runId).fetchHistory())).events;
  const typesOf = async (runId: string) => (await eventsOf(runId)).map((event) => event.eventType as string);
  const activitiesOf = async (runId: string) => activitiesRan(await eventsOf(runId)).map(([name]) => name);

  it('completed: the workflow (id run/<Run id>) appends the answer and bills once', async () => {
    const { threadId, runId } = await createRun('hello from temporal');
    const description = await handle(runId).describe();
    expect(description.type).toBe('runWorkflow');
    expect(description.taskQueue).toBe(app.runtime.deps.config.engine.temporal!.taskQueue);
    expect(await recordHistory(runId, 'completed')).toBe('completed');
    expect(await activitiesOf(runId)).toEqual(['startRun', 'callModel', 'finalizeRun']);
    expect((await messagesOf(threadId)).map((message) => [message.role, message.content[0].text])).toEqual([
      ['user', 'hello from temporal'],
      ['assistant', 'hello from temporal'],
    ]);
    expect(await debitsOf(runId, 0)).toHaveLength(1);
    expect(await handle(runId).query('status')).toBe('completed');
  });

  it('function call: requires_action (a timer), submit_tool_outputs wakes it (the timer is cancelled), round 1 completes it', async () => {
    const { threadId, runId } = await createRun('/call get_weather {"city":"Paris"}', toolAssistantId);
    const waiting = await untilStatus(threadId, runId, 'requires_action');
    expect(await handle(runId).query('status')).toBe('requires_action');
    const toolCall = waiting.required_action.submit_tool_outputs.tool_calls[0];
    expect(toolCall.function).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    const submitted = await call('POST', `/v2/threads/${threadId}/runs/${runId}/submit_tool_outputs`, {
      tool_outputs: [{ tool_call_id: toolCall.id, output: 'sunny' }],
    });
    expect(submitted.status).toBe(200);
    expect(await recordHistory(runId, 'submit-tool-outputs')).toBe('completed');
    const events = await eventsOf(runId);
    const types = events.map((event) => event.eventType);
    const signalled = events.findIndex(
      (event) =>
        event.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED' &&
        event.workflowExecutionSignaledEventAttributes.signalName === 'submit_tool_outputs',
    );
    expect(types.indexOf('EVENT_TYPE_TIMER_STARTED')).toBeGreaterThan(0);
    expect(signalled).toBeGreaterThan(types.indexOf('EVENT_TYPE_TIMER_STARTED'));
    expect(types.indexOf('EVENT_TYPE_TIMER_CANCELED')).toBeGreaterThan(signalled);
    expect(types).not.toContain('EVENT_TYPE_TIMER_FIRED');
    expect(await activitiesOf(runId)).toEqual([
      'startRun',
      'callModel',
      'requireAction',
      'collectToolOutputs',
      'callModel',
      'finalizeRun',
    ]);
    expect((await messagesOf(threadId)).at(-1)!.content[0].text).toBe('Tool get_weather returned: sunny');
    expect(await debitsOf(runId, 0)).toHaveLength(1);
    expect(await debitsOf(runId, 1)).toHaveLength(1);
  });

  it('cancelled while the vendor streams: signal → callModel cancelled (acknowledged) → finalised cancelled', async () => {
    // 200 words at 300 ms each: a minute of generation unless the cancel reaches the vendor call.
    const { threadId, runId } = await createRun('/delay 300 /words 200');
    await untilStatus(threadId, runId, 'in_progress');
    // Until a worker runs callModel (ActivityTaskStarted is written to history only when an attempt ends).
    const callModelRunning = async () =>
      ((await handle(runId).describe()).raw.pendingActivities ?? []).some(
        (activity) =>
          activity.activityType?.name === 'callModel' &&
          activity.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
      );
    await pollUntil(callModelRunning, (started) => started, 30_000);
    const cancelStarted = performance.now();
    const cancelled = await call('POST', `/v2/threads/${threadId}/runs/${runId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(['cancelling', 'cancelled']).toContain(cancelled.body.status);
    expect(await recordHistory(runId, 'cancelled')).toBe('cancelled');
    const cancelMs = Math.round(performance.now() - cancelStarted);
    // WAIT_CANCELLATION_COMPLETED: finalisation is scheduled only after the activity acknowledged the cancel.
    const types = await typesOf(runId);
    const acknowledged = types.indexOf('EVENT_TYPE_ACTIVITY_TASK_CANCELED');
    expect(types.indexOf('EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED')).toBeGreaterThan(0);
    expect(acknowledged).toBeGreaterThan(types.indexOf('EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED'));
    // (a local activity: its marker follows the acknowledgement)
    expect(types.lastIndexOf('EVENT_TYPE_MARKER_RECORDED')).toBeGreaterThan(acknowledged);
    expect(await activitiesOf(runId)).toEqual(['startRun', 'callModel', 'finalizeRun']);
    expect((await messagesOf(threadId)).map((message) => message.role)).toEqual(['user']);
    process.stdout.write(`run cancelled ${cancelMs} ms after the cancel request\n`);
    expect(cancelMs).toBeLessThan(60_000);
  });

  it('expired: nobody submits, the timer fires, the Run ends expired and refuses late outputs', async () => {
    const { threadId, runId } = await createRun('/call get_weather {"city":"Oslo"}', toolAssistantId);
    const waiting = await untilStatus(threadId, runId, 'requires_action');
    expect(await recordHistory(runId, 'expired')).toBe('expired');
    const types = await typesOf(runId);
    expect(types).toContain('EVENT_TYPE_TIMER_FIRED');
    expect(types).not.toContain('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED');
    expect((await activitiesOf(runId)).slice(0, 4)).toEqual([
      'startRun',
      'callModel',
      'requireAction',
      'collectToolOutputs',
    ]);
    expect((await activitiesOf(runId)).at(-1)).toBe('finalizeRun');
    const run = await getRun(threadId, runId);
    expect(run).toMatchObject({ status: 'expired', required_action: null, last_error: { code: 'run.expired' } });
    const late = await call('POST', `/v2/threads/${threadId}/runs/${runId}/submit_tool_outputs`, {
      tool_outputs: [{ tool_call_id: waiting.required_action.submit_tool_outputs.tool_calls[0].id, output: 'late' }],
    });
    expect(late.status).toBe(400);
    expect(await debitsOf(runId, 0)).toHaveLength(1);
  });

  it('cancelled while waiting in requires_action: the cancel signal ends the wait (timer cancelled), finalised cancelled', async () => {
    const { threadId, runId } = await createRun('/call get_weather {"city":"Rome"}', toolAssistantId);
    await untilStatus(threadId, runId, 'requires_action');
    await pollUntil(typesOf.bind(null, runId), (types) => types.includes('EVENT_TYPE_TIMER_STARTED'), 30_000);
    const cancelled = await call('POST', `/v2/threads/${threadId}/runs/${runId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(await recordHistory(runId, 'cancelled-requires-action')).toBe('cancelled');
    const types = await typesOf(runId);
    expect(types).toContain('EVENT_TYPE_TIMER_CANCELED');
    expect(types).not.toContain('EVENT_TYPE_TIMER_FIRED');
    expect(await activitiesOf(runId)).toEqual(['startRun', 'callModel', 'requireAction', 'finalizeRun']);
  });
});
