import { useTestApp } from '../support/harness';
import { expectCarried } from '../support/carry';
import { debitsOf, pollUntil } from '../responses/helpers';

/** Spec: Legacy endpoints (Runs); api-decisions 6, 10, 11. Runs of dev-echo over real HTTP. */
describe('runs', () => {
  const suite = useTestApp({ app: { env: { RUN_REQUIRES_ACTION_TIMEOUT_MS: '1500' } } });
  const call = (method: string, path: string, body?: unknown, key = suite.key) =>
    suite.app.request(method, path, { key, body });

  const weatherTool = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  };
  let assistantId: number;
  let toolAssistantId: number;
  beforeAll(async () => {
    assistantId = (
      await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'Echo', instructions: 'Answer briefly.' })
    ).body.id;
    toolAssistantId = (
      await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'Weather', tools: [weatherTool] })
    ).body.id;
  });

  const newThread = async (text: string) =>
    (await call('POST', '/v2/threads', { messages: [{ role: 'user', content: text }] })).body.id as string;
  const getRun = async (threadId: string, runId: string) =>
    (await call('GET', `/v2/threads/${threadId}/runs/${runId}`)).body;
  const FINAL = ['completed', 'incomplete', 'failed', 'cancelled', 'expired'];
  /** Polls the Run until it reaches one of `statuses`; a Run that ends otherwise fails the test at once. */
  const untilStatus = async (threadId: string, runId: string, statuses: string[]) => {
    const run = await pollUntil(
      () => getRun(threadId, runId),
      (current) => statuses.includes(current.status) || FINAL.includes(current.status),
      15_000,
    );
    if (!statuses.includes(run.status))
      throw new Error(
        `run ${runId} ended ${run.status} (${JSON.stringify(run.last_error)}), not ${statuses.join(' or ')}`,
      );
    return run;
  };
  const debitsFor = async (runId: string) =>
    (await debitsOf(suite.app, suite.accountId)).filter(
      (debit) => (debit.metadata as { run_id?: string }).run_id === runId,
    );
  const messagesOf = async (threadId: string) =>
    (await call('GET', `/v2/threads/${threadId}/messages?order=asc`)).body.data;

  it('runs a thread: queued, then completed with the assistant message appended, usage and one debit', async () => {
    const threadId = await newThread('hello runs');
    const created = await call('POST', `/v2/threads/${threadId}/runs`, {
      assistant_id: assistantId,
      metadata: { origin: 'test' },
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      object: 'thread.run',
      thread_id: threadId,
      assistant_id: assistantId,
      model: 'dev-echo',
      instructions: 'Answer briefly.',
      required_action: null,
      metadata: { origin: 'test' },
    });
    expect(['queued', 'in_progress', 'completed']).toContain(created.body.status);
    const run = await untilStatus(threadId, created.body.id, ['completed']);
    expect(run.usage).toMatchObject({
      prompt_tokens: expect.any(Number),
      completion_tokens: 2,
      total_tokens: expect.any(Number),
    });
    expect(run.completed_at).toEqual(expect.any(Number));
    const messages = await messagesOf(threadId);
    expect(messages.map((message: any) => [message.role, message.content[0].text])).toEqual([
      ['user', 'hello runs'],
      ['assistant', 'hello runs'],
    ]);
    expect(messages[1]).toMatchObject({ run_id: run.id, assistant_id: assistantId });
    expect(run.usage.cost).toBeGreaterThan(0);
    const debits = await debitsFor(run.id);
    expect(debits).toHaveLength(1);
    expect(debits[0]).toMatchObject({
      metadata: { source: 'api', service: 'runs', model: 'dev-echo', vendor: 'dev', run_id: run.id },
    });
    expectCarried(debits[0], run.usage.cost);
  });

  it('stops in requires_action for a function call, refuses wrong outputs, and completes after submit_tool_outputs', async () => {
    const threadId = await newThread('/call get_weather {"city":"Paris"}');
    const created = await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: toolAssistantId });
    const waiting = await untilStatus(threadId, created.body.id, ['requires_action']);
    const toolCalls = waiting.required_action.submit_tool_outputs.tool_calls;
    expect(toolCalls).toEqual([
      { id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    const submit = (outputs: unknown) =>
      call('POST', `/v2/threads/${threadId}/runs/${created.body.id}/submit_tool_outputs`, { tool_outputs: outputs });
    const unknown = await submit([{ tool_call_id: 'call_nope', output: 'x' }]);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('run.invalid_request');
    expect((await getRun(threadId, created.body.id)).status).toBe('requires_action');
    const accepted = await submit([{ tool_call_id: toolCalls[0].id, output: 'sunny' }]);
    expect(accepted.status).toBe(200);
    const run = await untilStatus(threadId, created.body.id, ['completed']);
    expect(run.required_action).toBeNull();
    const messages = await messagesOf(threadId);
    expect(messages.at(-1).content[0].text).toBe('Tool get_weather returned: sunny');
    const again = await submit([{ tool_call_id: toolCalls[0].id, output: 'sunny' }]);
    expect(again.status).toBe(400);
    // One debit per vendor call: the one that asked for the tool, and the one that answered.
    const debits = await debitsFor(run.id);
    expect(debits.map((debit) => debit.usage)).toHaveLength(2);
    // Each its exact cost less what the account paid ahead, rounded up; together the Run's cost.
    expect(debits.reduce((sum, debit) => sum + Number(debit.metadata.cost), 0)).toBeCloseTo(run.usage.cost, 9);
    for (const debit of debits) expectCarried(debit, Number(debit.metadata.cost));
  });

  it('expires a Run left in requires_action', async () => {
    const threadId = await newThread('/call get_weather {"city":"Oslo"}');
    const created = await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: toolAssistantId });
    const waiting = await untilStatus(threadId, created.body.id, ['requires_action']);
    const run = await untilStatus(threadId, created.body.id, ['expired']);
    expect(run.last_error).toMatchObject({ code: 'run.expired' });
    const late = await call('POST', `/v2/threads/${threadId}/runs/${created.body.id}/submit_tool_outputs`, {
      tool_outputs: [{ tool_call_id: waiting.required_action.submit_tool_outputs.tool_calls[0].id, output: 'late' }],
    });
    expect(late.status).toBe(400);
  });

  it('cancels a Run while the vendor streams; one active Run per thread', async () => {
    const threadId = await newThread('/delay 100 /words 200');
    const created = await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: assistantId });
    await untilStatus(threadId, created.body.id, ['in_progress']);
    const second = await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: assistantId });
    expect(second.status).toBe(400);
    const cancelled = await call('POST', `/v2/threads/${threadId}/runs/${created.body.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(['cancelling', 'cancelled']).toContain(cancelled.body.status);
    const run = await untilStatus(threadId, created.body.id, ['cancelled']);
    expect(run.cancelled_at).toEqual(expect.any(Number));
    expect((await messagesOf(threadId)).map((message: any) => message.role)).toEqual(['user']);
    const list = await call('GET', `/v2/threads/${threadId}/runs`);
    expect(list.body).toMatchObject({ object: 'list', first_id: created.body.id, has_more: false });
  });

  it('cancels a Run waiting in requires_action (its job suspended) at once', async () => {
    const threadId = await newThread('/call get_weather {"city":"Rome"}');
    const created = await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: toolAssistantId });
    await untilStatus(threadId, created.body.id, ['requires_action']);
    // The embedded engine suspends the job just after the Run shows requires_action (Temporal: the workflow waits
    // on a timer and the signal, nothing to see in `jobs`).
    if (suite.app.engine === 'embedded') {
      await pollUntil(
        () =>
          suite.app.db
            .selectFrom('jobs')
            .select(['status', 'suspensions'])
            .where('id', '=', created.body.id)
            .executeTakeFirstOrThrow(),
        (job) => job.status === 'pending' && job.suspensions === 1,
      );
    }
    expect((await call('POST', `/v2/threads/${threadId}/runs/${created.body.id}/cancel`)).body.status).toBe(
      'cancelling',
    );
    const run = await untilStatus(threadId, created.body.id, ['cancelled']);
    expect(run).toMatchObject({
      required_action: null,
      last_error: null,
      usage: { completion_tokens: expect.any(Number) },
    });
  });

  it('deleting a thread cancels its active Run first', async () => {
    const threadId = await newThread('/delay 100 /words 200');
    const created = await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: assistantId });
    await untilStatus(threadId, created.body.id, ['in_progress']);
    expect((await call('DELETE', `/v2/threads/${threadId}`)).body).toEqual({
      id: threadId,
      object: 'thread.deleted',
      deleted: true,
    });
    expect((await call('GET', `/v2/threads/${threadId}/runs/${created.body.id}`)).status).toBe(404);
    // The Run is gone from the API with its thread; its job still ends it, cancelled, without appending.
    const stored = await pollUntil(
      () =>
        suite.app.db
          .selectFrom('runs')
          .select(['status', 'cancelled_at'])
          .where('id', '=', created.body.id)
          .executeTakeFirstOrThrow(),
      (run) => FINAL.includes(run.status),
    );
    expect(stored.status).toBe('cancelled');
    expect(
      await suite.app.db.selectFrom('thread_messages').select('id').where('thread_id', '=', threadId).execute(),
    ).toEqual([]);
  });

  it('creates a thread and runs it in one call', async () => {
    const created = await call('POST', '/v2/threads/runs', {
      assistant_id: assistantId,
      thread: { messages: [{ role: 'user', content: 'one call' }] },
    });
    expect(created.status).toBe(200);
    await untilStatus(created.body.thread_id, created.body.id, ['completed']);
    expect((await messagesOf(created.body.thread_id)).map((message: any) => message.content[0].text)).toEqual([
      'one call',
      'one call',
    ]);
  });

  it('refuses a Run with 402 when the balance is spent, writing nothing', async () => {
    const broke = await suite.app.createAccount({ balance: 0 });
    const as = (method: string, path: string, body?: unknown) => call(method, path, body, broke.key);
    const assistant = (await as('POST', '/v2/assistants', { model: 'dev-echo', name: 'Echo' })).body.id;
    const threadId = (await as('POST', '/v2/threads', { messages: [{ role: 'user', content: 'hi' }] })).body.id;
    const refused = await as('POST', `/v2/threads/${threadId}/runs`, { assistant_id: assistant });
    expect([refused.status, refused.body.error.code]).toEqual([402, 'organization.payment_required']);
    const refusedWithThread = await as('POST', '/v2/threads/runs', {
      assistant_id: assistant,
      thread: { messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(refusedWithThread.status).toBe(402);
    expect((await as('GET', `/v2/threads/${threadId}/runs`)).body.data).toEqual([]);
    const threads = await suite.app.db
      .selectFrom('threads')
      .select('id')
      .where('account_id', '=', broke.accountId)
      .execute();
    expect(threads.map((thread) => thread.id)).toEqual([threadId]);
  });

  it('answers bad bodies with 400 run.invalid_request and other accounts with 404', async () => {
    const threadId = await newThread('x');
    for (const body of [
      {},
      { assistant_id: 'one' },
      { assistant_id: assistantId, surprise: true },
      { assistant_id: assistantId, stream: true },
    ]) {
      const reply = await call('POST', `/v2/threads/${threadId}/runs`, body);
      expect([reply.status, reply.body.error?.code]).toEqual([400, 'run.invalid_request']);
    }
    const other = await suite.app.createAccount();
    const created = await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: assistantId });
    expect([created.status, created.body.error]).toEqual([200, undefined]);
    expect((await call('GET', `/v2/threads/${threadId}/runs/${created.body.id}`, undefined, other.key)).status).toBe(
      404,
    );
    expect((await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: assistantId }, other.key)).status).toBe(
      404,
    );
    await untilStatus(threadId, created.body.id, ['completed']);
  });
});

/**
 * A Run cancelled while it waits for a slot ends `cancelled` at once, not when a slot frees (on Temporal it stayed
 * `cancelling` until a worker's activity slot was free: issue 34, as for a Response's webhook).
 */
describe('runs: a cancel while queued, every slot busy', () => {
  const suite = useTestApp({ app: { env: { ENGINE_CONCURRENCY: '1' } } });
  const call = (method: string, path: string, body?: unknown) =>
    suite.app.request(method, path, { key: suite.key, body });

  it('ends cancelled at once while the slot is still busy, and never runs', async () => {
    // The one slot: a generation that runs for 30 s unless cancelled.
    const busy = (await call('POST', '/v2/responses', { model: 'dev-echo', input: '/delay 100 /words 300' })).body.id;
    await pollUntil(
      () => call('GET', `/v2/responses/${busy}`).then((reply) => reply.body),
      (response) => response.status === 'in_progress',
      10_000,
    );
    const assistantId = (await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'Echo' })).body.id;
    const threadId = (await call('POST', '/v2/threads', { messages: [{ role: 'user', content: 'hello' }] })).body.id;
    const run = (await call('POST', `/v2/threads/${threadId}/runs`, { assistant_id: assistantId })).body;
    expect(run.status).toBe('queued');

    const started = Date.now();
    const cancelling = await call('POST', `/v2/threads/${threadId}/runs/${run.id}/cancel`);
    expect(cancelling.status).toBe(200);
    const ended = await pollUntil(
      () => call('GET', `/v2/threads/${threadId}/runs/${run.id}`).then((reply) => reply.body),
      (current) => current.status !== 'cancelling',
      10_000,
    );
    expect(ended).toMatchObject({ status: 'cancelled', started_at: null, usage: null });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await call('GET', `/v2/responses/${busy}`)).body.status).toBe('in_progress');
    expect((await call('GET', `/v2/threads/${threadId}/messages`)).body.data).toHaveLength(1);

    await call('POST', `/v2/responses/${busy}/cancel`);
    await suite.app.untilJobEnded({ kind: 'response', id: busy });
  });
});
