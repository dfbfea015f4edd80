import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { workflowIdOf } from '../../src/engine/job-kind';
import { SEARCH_ATTRIBUTES } from '../../src/engine/search-attributes';
import { newId } from '../../src/ids';
import { TestApp } from '../support/harness';
import { activitiesRan, connectClient, describeOnTemporal } from './temporal-client';
import { startMcpTestServer } from '../mcp/mcp-test-server';
import { storedRequest } from '../responses/helpers';
import { startReceiver } from '../webhooks/receiver';

/**
 * Responses as an operator sees them on a real Temporal server (`npm run test:temporal`, TEST_TEMPORAL_ADDRESS):
 * the app runs the Temporal engine and a production worker (runTemporalWorker with createActivities) on a task
 * queue of its own (test/support/harness.ts); the tests read the workflows with a client. Every workflow's history is
 * saved to test/temporal/fixtures/histories/, which the offline replay tests (test/temporal/replay.test.ts)
 * then replay on every `npm test`.
 */
const HISTORIES = path.join(__dirname, '..', 'temporal', 'fixtures', 'histories');

interface SseEvent {
  type: string;
  data: any;
}

/** Reads an SSE reply event by event; `until` may stop early (the connection is then closed). */
async function readSse(reply: Response, until?: (event: SseEvent) => boolean | Promise<boolean>): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const reader = reply.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return events;
      buffer += value;
      let boundary: number;
      while ((boundary = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        const type = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (!type || data === undefined) continue; // keep-alive comment
        const event = { type, data: JSON.parse(data) };
        events.push(event);
        if (until && (await until(event))) return events;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

describeOnTemporal('Responses on a real Temporal server', () => {
  let client: Awaited<ReturnType<typeof connectClient>>;
  let app: TestApp;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    client = await connectClient();
    // With TEMPORAL_ADDRESS set, createRuntime builds the Temporal engine; its sweeper runs every 5 s.
    app = await TestApp.start();
    expect(app.runtime.deps.engine.name).toBe('temporal');
    ({ key, accountId } = await app.createAccount());
    fs.mkdirSync(HISTORIES, { recursive: true });
  });

  afterAll(async () => {
    await app?.close();
    await client?.close();
  });

  // The workflow id carries the kind: `response/resp_…` (engine/job-kind.ts).
  const handle = (id: string) => client.workflow.getHandle(workflowIdOf({ kind: 'response', id }));

  /** Waits for the workflow, checks it ended as the Response did, and stores its history as a replay fixture. */
  async function recordHistory(id: string, scenario: string, owner: TestApp = app): Promise<string> {
    const result = await handle(id).result();
    const history = await handle(id).fetchHistory();
    fs.writeFileSync(path.join(HISTORIES, `${scenario}.json`), historyToJSON(history) + '\n');
    const row = await owner.db.selectFrom('responses').select('status').where('id', '=', id).executeTakeFirstOrThrow();
    expect(result).toBe(row.status);
    return result;
  }

  /** The debits of a Response (one per billed Response: its operation key). */
  const debitsOf = async (id: string): Promise<number> =>
    (
      await app.db
        .selectFrom('ledger_transactions')
        .select('id')
        .where('operation_key', '=', `response:${id}`)
        .execute()
    ).length;

  /** Event type names (the proto objects carry enum numbers; the JSON form has the names). */
  const eventTypes = async (id: string): Promise<string[]> =>
    JSON.parse(historyToJSON(await handle(id).fetchHistory())).events.map(
      (event: { eventType: string }) => event.eventType,
    );

  it('background: the workflow (id = Response id) completes the Response', async () => {
    const created = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: 'hello from temporal' },
    });
    expect(created.status).toBe(200);
    expect(created.body.status).toBe('queued');
    const id = created.body.id;
    const description = await handle(id).describe();
    expect(description.type).toBe('responseWorkflow');
    expect(description.taskQueue).toBe(app.runtime.deps.config.engine.temporal!.taskQueue);
    // Search attributes and memo (the engine registered the attributes at start): what an operator filters by.
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.model)).toBe('dev-echo');
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.vendor)).toBe('dev');
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.kind)).toBe('response');
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.background)).toBe(true);
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.accountId)).toMatch(/^acct_/);
    expect(description.memo).toMatchObject({
      kind: 'response',
      resourceId: id,
      model: 'dev-echo',
      vendor: 'dev',
      background: true,
    });
    expect(await recordHistory(id, 'background-completed')).toBe('completed');
    // The workflow kept SwitchyardStatus current; at the end it is the Response's final status.
    expect((await handle(id).describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.status)).toBe('completed');
    const got = await app.request('GET', `/v2/responses/${id}`, { key });
    expect(got.body).toMatchObject({
      status: 'completed',
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'hello from temporal' }] }],
    });
    expect(await handle(id).query('status')).toBe('completed');
  });

  it('sync (background: false): the reply is the final Response', async () => {
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: 'sync please', background: false },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      status: 'completed',
      output: [{ content: [{ text: 'sync please' }] }],
      usage: { output_tokens: 2 },
    });
    await recordHistory(reply.body.id, 'sync-completed');
  });

  it('stream: deltas then response.completed over SSE', async () => {
    const reply = await fetch(`${app.baseUrl}/v2/responses`, {
      method: 'POST',
      headers: { 'x-auth-token': key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'dev-echo', input: '/delay 20 one two three', background: false, stream: true }),
    });
    const events = await readSse(reply);
    const types = events.map((event) => event.type);
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.in_progress');
    expect(
      events
        .filter((event) => event.type === 'response.output_text.delta')
        .map((event) => event.data.delta)
        .join(''),
    ).toBe('one two three');
    expect(types.at(-1)).toBe('response.completed');
    await recordHistory(events[0].data.response.id, 'stream-completed');
  });

  it('cancel while the provider runs: signal → activity cancelled → finalised as cancelled', async () => {
    // 200 words at 300 ms each: a minute of generation unless the cancel reaches the vendor call.
    const created = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: '/delay 300 /words 200' },
    });
    const id = created.body.id;
    const stream = await fetch(`${app.baseUrl}/v2/responses/${id}?stream=true`, { headers: { 'x-auth-token': key } });
    await readSse(stream, (event) => event.type === 'response.output_text.delta');
    const cancelStarted = performance.now();
    const cancelled = await app.request('POST', `/v2/responses/${id}/cancel`, { key });
    const cancelMs = Math.round(performance.now() - cancelStarted);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id, status: 'cancelled', output: [] });
    expect(await recordHistory(id, 'cancelled-in-progress')).toBe('cancelled');
    // WAIT_CANCELLATION_COMPLETED: finalisation is scheduled only after the activity acknowledged the cancel.
    const types = await eventTypes(id);
    const acknowledged = types.indexOf('EVENT_TYPE_ACTIVITY_TASK_CANCELED');
    expect(types.indexOf('EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED')).toBeGreaterThan(0);
    expect(acknowledged).toBeGreaterThan(types.indexOf('EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED'));
    // (a local activity: its marker follows the acknowledgement)
    expect(types.lastIndexOf('EVENT_TYPE_MARKER_RECORDED')).toBeGreaterThan(acknowledged);
    // Cancellation reaches an activity only through a heartbeat response (throttled to 2 s by the worker's maxHeartbeatThrottleInterval).
    process.stdout.write(`cancel reply after ${cancelMs} ms\n`);
    expect(cancelMs).toBeLessThan(60_000);
  });

  it('cancel while queued (every activity slot busy): its first step (start and call) is cancelled before it runs, finalised and notified at once (local activities)', async () => {
    // One activity slot on the workflows' queue (ENGINE_CONCURRENCY), held by a generation of a minute.
    const crowded = await TestApp.start({ env: { ENGINE_CONCURRENCY: '1' } });
    const receiver = await startReceiver();
    try {
      const account = await crowded.createAccount();
      const create = (body: Record<string, unknown>) =>
        crowded.request('POST', '/v2/responses', { key: account.key, body: { model: 'dev-echo', ...body } });
      const busy = (await create({ input: '/delay 300 /words 200' })).body.id;
      const stream = await fetch(`${crowded.baseUrl}/v2/responses/${busy}?stream=true`, {
        headers: { 'x-auth-token': account.key },
      });
      await readSse(stream, (event) => event.type === 'response.output_text.delta');
      const id = (await create({ input: 'waiting', metadata: { webhook_url: `${receiver.url}/queued` } })).body.id;

      const cancelled = await crowded.request('POST', `/v2/responses/${id}/cancel`, { key: account.key });
      expect(cancelled.body).toMatchObject({ id, status: 'cancelled', output: [] });
      expect(await recordHistory(id, 'cancelled-queued', crowded)).toBe('cancelled');
      while (!receiver.requests.some((request) => request.path === '/queued'))
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await crowded.request('GET', `/v2/responses/${busy}`, { key: account.key })).body.status).toBe(
        'in_progress',
      );

      const events = JSON.parse(historyToJSON(await handle(id).fetchHistory())).events as Array<Record<string, any>>;
      // The first step (its start and vendor call, START_IN_CALL) cancelled on the workflows' queue before a slot ran
      // it; the finalisation and the webhook's claim run as local activities (workflows/temporal-context.ts,
      // LOCAL_BOOKKEEPING): no slot of a queue to wait for.
      const queue = crowded.runtime.deps.config.engine.temporal!.taskQueue;
      expect(activitiesRan(events)).toEqual([
        ['startAndCallProvider', queue],
        ['finalizeResponse', 'local'],
        ['sendWebhook', 'local'],
      ]);
      const types = events.map((event) => event.eventType);
      expect(types).toContain('EVENT_TYPE_MARKER_RECORDED');
      expect(types).toContain('EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED');
      expect(types).not.toContain('EVENT_TYPE_ACTIVITY_TASK_STARTED');
      await crowded.request('POST', `/v2/responses/${busy}/cancel`, { key: account.key });
    } finally {
      await crowded.close();
      await receiver.close();
    }
  });

  it('Idempotency-Key: one Response, one workflow run; launching again is a no-op', async () => {
    const body = { model: 'dev-echo', input: 'exactly once' };
    const headers = { 'idempotency-key': `idem-${randomBytes(6).toString('hex')}` };
    const first = await app.request('POST', '/v2/responses', { key, body, headers });
    const second = await app.request('POST', '/v2/responses', { key, body, headers });
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const id = first.body.id;
    const { runId } = await handle(id).describe();
    // While running: USE_EXISTING returns the same run.
    await app.runtime.deps.engine.launch({ id, kind: 'response' });
    expect((await handle(id).describe()).runId).toBe(runId);
    await recordHistory(id, 'idempotent-completed');
    // Closed: REJECT_DUPLICATE refuses a new run, which the engine treats as "already done".
    await app.runtime.deps.engine.launch({ id, kind: 'response' });
    expect((await handle(id).describe()).runId).toBe(runId);
    expect(await debitsOf(id)).toBe(1);
  });

  it('eager start: the API process with a worker gets each first workflow task with its start; an API-only replica does not', async () => {
    const starts = async (owner: TestApp, eager: 'true' | 'false') =>
      (await owner.runtime.deps.metrics.temporalStarts.get()).values.find((value) => value.labels.eager === eager)
        ?.value ?? 0;
    const eagerBefore = await starts(app, 'true');
    const created = await app.request('POST', '/v2/responses', { key, body: { model: 'dev-echo', input: 'eager' } });
    expect(created.body.status).toBe('queued');
    const id = created.body.id;
    expect(await starts(app, 'true')).toBe(eagerBefore + 1);
    // The same workflow, the same single run and debit as any other start: launching again starts nothing, eagerly
    // or not (USE_EXISTING while it runs, REJECT_DUPLICATE once closed).
    const { runId } = await handle(id).describe();
    await app.runtime.deps.engine.launch({ id, kind: 'response' });
    expect(await recordHistory(id, 'eager-completed')).toBe('completed');
    await app.runtime.deps.engine.launch({ id, kind: 'response' });
    expect((await handle(id).describe()).runId).toBe(runId);
    expect(await starts(app, 'true')).toBe(eagerBefore + 1);
    expect(await debitsOf(id)).toBe(1);

    // An API-only replica on the same task queue (no worker in its process): its starts go through matching, and
    // the worker of the other process runs them.
    // (The same schema, so the same task queue: test/support/harness.ts.)
    const replica = await TestApp.start({ worker: false, schema: app.schema });
    expect(replica.runtime.deps.config.engine.temporal!.taskQueue).toBe(
      app.runtime.deps.config.engine.temporal!.taskQueue,
    );
    try {
      const other = await replica.request('POST', '/v2/responses', {
        key,
        body: { model: 'dev-echo', input: 'not eager' },
      });
      expect(await replica.runtime.deps.responses.waitForFinal(accountId, other.body.id)).toMatchObject({
        status: 'completed',
      });
      expect(await starts(replica, 'false')).toBe(1);
      expect(await starts(replica, 'true')).toBe(0);
    } finally {
      await replica.close();
    }
  });

  it('function call round trip: function_call output, then the tool result continues the Response', async () => {
    const tools = [
      {
        type: 'function',
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    const call = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: '/call get_weather {"city":"Paris"}', tools, background: false },
    });
    expect(call.body).toMatchObject({
      status: 'completed',
      output: [{ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}' }],
    });
    await recordHistory(call.body.id, 'function-call');
    const followUp = await app.request('POST', '/v2/responses', {
      key,
      body: {
        model: 'dev-echo',
        previous_response_id: call.body.id,
        input: [{ type: 'function_call_output', call_id: call.body.output[0].call_id, output: 'sunny' }],
        tools,
        background: false,
      },
    });
    expect(followUp.body).toMatchObject({
      status: 'completed',
      output: [{ type: 'message', content: [{ text: 'Tool get_weather returned: sunny' }] }],
    });
    await recordHistory(followUp.body.id, 'function-call-output');
  });

  it('MCP: a two-round tool loop (list, call, call, answer) against a real MCP server', async () => {
    const mcp = await startMcpTestServer();
    try {
      const enabled = await app.createAccount({ mcpEnabled: true });
      const reply = await app.request('POST', '/v2/responses', {
        key: enabled.key,
        body: {
          model: 'dev-echo',
          input: '/call add {"a": 1, "b": 2} /then /call shout {"text": "ok"}',
          tools: [{ type: 'mcp', server_label: 'calc', server_url: `${mcp.url}/mcp`, require_approval: 'never' }],
          background: false,
        },
      });
      expect(reply.body.output.map((item: { type: string }) => item.type)).toEqual([
        'mcp_list_tools',
        'mcp_call',
        'mcp_call',
        'message',
      ]);
      expect(mcp.calls.map((call) => call.tool)).toEqual(['add', 'shout']);
      expect(await recordHistory(reply.body.id, 'mcp-two-rounds')).toBe('completed');
    } finally {
      await mcp.close();
    }
  });

  it('the outbox sweeper starts a workflow for a committed job that was never launched', async () => {
    // What a crash between commit and launch leaves: a queued Response and an unlaunched jobs row.
    const id = newId('resp');
    const request = storedRequest('swept up');
    await app.db
      .insertInto('responses')
      .values({
        id,
        account_id: accountId,
        status: 'queued',
        background: true,
        model: 'dev-echo',
        vendor: 'dev',
        request: JSON.stringify(request),
      })
      .execute();
    await app.runtime.deps.events.write(id, [
      { type: 'response.created', sequence_number: 0, response: { id, status: 'queued' } },
    ]);
    await app.db
      .insertInto('jobs')
      .values({ id, kind: 'response', created_at: new Date(Date.now() - 60_000) })
      .execute();
    const final = await app.runtime.deps.responses.waitForFinal(accountId, id);
    expect(final).toMatchObject({ id, status: 'completed' });
    expect(await recordHistory(id, 'swept-completed')).toBe('completed');
  });
});
