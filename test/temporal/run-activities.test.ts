import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, type Activities } from '../../src/engine/job-kinds';
import type { ModelOutcome, RunJobInput } from '../../workflows/run.flow';
import { useTestApp } from '../support/harness';
import { quietLogger } from './workflow-bundle';

type ToolCallsOutcome = Extract<ModelOutcome, { kind: 'tool_calls' }>;

/**
 * The real Run activities (createActivities, src/threads/run.activities.ts) inside Temporal's
 * MockActivityEnvironment — the Context (cancellation signal, heartbeats) a Temporal worker gives them — against
 * the real database of a TestApp. Runs are created over HTTP (`POST /v2/threads/{id}/runs`) after the app's own
 * engine was stopped, so its launch does nothing and only these activity calls touch them. One
 * MockActivityEnvironment per activity run: its Context is shared and stays cancelled once cancelled.
 */
describe('run activities under MockActivityEnvironment', () => {
  const suite = useTestApp();
  const call = (method: string, path: string, body?: unknown) =>
    suite.app.request(method, path, { key: suite.key, body });
  const WAIT_MS = 60_000;

  let activities: Activities;
  /** The same activities with a 1 s wait in requires_action, for expiry. */
  let shortWait: Activities;
  let assistantId: number;
  let toolAssistantId: number;

  beforeAll(async () => {
    // The app's embedded engine would run the Runs it creates: stopped, it claims nothing.
    await suite.app.runtime.deps.engine.stop();
    const { db, logger, events, webhooks, catalog, providers, ledger } = suite.app.runtime.deps;
    // A short heartbeat period so a 100 ms-per-word call heartbeats at once.
    const deps = { db, logger, events, webhooks, catalog, providers, ledger, heartbeatIntervalMs: 20 };
    activities = createActivities({ ...deps, requiresActionTimeoutMs: WAIT_MS });
    shortWait = createActivities({ ...deps, requiresActionTimeoutMs: 1000 });
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
  });

  const environment = (activityType: string) =>
    new MockActivityEnvironment({ activityType, heartbeatTimeoutMs: 20_000 }, { logger: quietLogger });

  /** A thread with one user message and a queued Run of it, through the API. */
  async function createRun(
    text: string,
    assistant = assistantId,
  ): Promise<{ threadId: string; runId: string; input: RunJobInput }> {
    const thread = await call('POST', '/v2/threads', { messages: [{ role: 'user', content: text }] });
    expect(thread.status).toBe(200);
    const run = await call('POST', `/v2/threads/${thread.body.id}/runs`, { assistant_id: assistant });
    expect(run.status).toBe(200);
    expect(run.body.status).toBe('queued');
    // Its job row (the outbox) is written, and left alone by the stopped engine.
    expect(
      await suite.app.db
        .selectFrom('jobs')
        .select(['kind', 'status', 'attempts'])
        .where('id', '=', run.body.id)
        .executeTakeFirst(),
    ).toEqual({ kind: 'run', status: 'pending', attempts: 0 });
    return { threadId: thread.body.id, runId: run.body.id, input: { runId: run.body.id } };
  }

  const row = (id: string) =>
    suite.app.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const debits = (id: string, round: number) =>
    suite.app.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('operation_key', '=', `run:${id}:${round}`)
      .execute();
  const balance = async () =>
    Number(
      (
        await suite.app.db
          .selectFrom('accounts')
          .select('balance')
          .where('id', '=', suite.accountId)
          .executeTakeFirstOrThrow()
      ).balance,
    );
  const messages = async (threadId: string) =>
    (await call('GET', `/v2/threads/${threadId}/messages?order=asc`)).body.data as Array<{
      role: string;
      run_id: string | null;
      content: Array<{ text: string }>;
    }>;

  const startRun = (input: RunJobInput) => environment('startRun').run(activities.startRun, input);
  const callModel = (input: RunJobInput, round: number) =>
    environment('callModel').run(activities.callModel, { ...input, round });

  /** startRun, then round 0 asks for get_weather. */
  async function askForTool(city = 'Paris') {
    const run = await createRun(`/call get_weather {"city":"${city}"}`, toolAssistantId);
    expect(await startRun(run.input)).toEqual({ proceed: true });
    const outcome = (await callModel(run.input, 0)) as ToolCallsOutcome;
    expect(outcome.kind).toBe('tool_calls');
    return { ...run, outcome };
  }

  describe('startRun', () => {
    it('moves queued → in_progress; a retried attempt proceeds without a new start time', async () => {
      const { runId, input } = await createRun('hello');
      expect(await startRun(input)).toEqual({ proceed: true });
      const started = await row(runId);
      expect(started.status).toBe('in_progress');
      expect(started.started_at).toBeInstanceOf(Date);
      expect(await startRun(input)).toEqual({ proceed: true });
      expect((await row(runId)).started_at).toEqual(started.started_at);
    });

    it('refuses a Run cancelled (over the API) before it started', async () => {
      const { threadId, runId, input } = await createRun('hello');
      const cancelled = await call('POST', `/v2/threads/${threadId}/runs/${runId}/cancel`);
      expect(cancelled.body.status).toBe('cancelling');
      expect(await startRun(input)).toEqual({ proceed: false });
      expect((await row(runId)).status).toBe('cancelling');
    });
  });

  describe('callModel', () => {
    it('returns the message of dev-echo with its tokens, heartbeating with the round; the Run stays in_progress', async () => {
      const { runId, input } = await createRun('/delay 60 alpha beta gamma delta');
      await startRun(input);
      const env = environment('callModel');
      const heartbeats: unknown[] = [];
      env.on('heartbeat', (details) => heartbeats.push(details));
      const outcome = await env.run(activities.callModel, { ...input, round: 0 });
      // Input: the Assistant's instructions (2 words) and the message (6 words, the directive included).
      expect(outcome).toEqual({
        kind: 'message',
        status: 'completed',
        text: 'alpha beta gamma delta',
        inputTokens: 8,
        outputTokens: 4,
      });
      expect(heartbeats.length).toBeGreaterThanOrEqual(2);
      for (const details of heartbeats) expect(details).toEqual({ round: 0 });
      expect((await row(runId)).status).toBe('in_progress');
    });

    it('returns the tool calls of a function-calling Assistant', async () => {
      const { outcome } = await askForTool();
      expect(outcome).toEqual({
        kind: 'tool_calls',
        calls: [{ id: expect.stringMatching(/^call_/), name: 'get_weather', arguments: '{"city":"Paris"}' }],
        inputTokens: expect.any(Number),
        outputTokens: 2,
      });
      expect(outcome.inputTokens).toBeGreaterThan(0);
    });

    it('stops the vendor call promptly on cancel and rejects with an AbortError (reported as cancelled)', async () => {
      const { runId, input } = await createRun('/delay 100 /words 200');
      await startRun(input);
      const env = environment('callModel');
      let cancelledAt = 0;
      // Cancel once the call is under way (its first heartbeat), as a heartbeat response would deliver it.
      env.once('heartbeat', () => {
        cancelledAt = performance.now();
        env.cancel();
      });
      const startedAt = performance.now();
      const error = await env.run(activities.callModel, { ...input, round: 0 }).then(
        () => undefined,
        (caught: Error) => caught,
      );
      const rejectedAt = performance.now();
      expect(error?.name).toBe('AbortError');
      expect(cancelledAt).toBeGreaterThan(startedAt);
      // Uncancelled, 199 gaps of 100 ms: about 20 s.
      expect(rejectedAt - cancelledAt).toBeLessThan(500);
      expect((await row(runId)).status).toBe('in_progress');
    });

    it('answers cancelled without calling the vendor once a cancel was requested', async () => {
      const { threadId, runId, input } = await createRun('/delay 5000 never');
      await startRun(input);
      await call('POST', `/v2/threads/${threadId}/runs/${runId}/cancel`);
      const startedAt = performance.now();
      expect(await callModel(input, 0)).toEqual({ kind: 'cancelled' });
      expect(performance.now() - startedAt).toBeLessThan(2000);
    });

    it('answers a round whose tool calls are stored (a re-run) from the Run, with no new tokens', async () => {
      const { input, outcome } = await askForTool();
      await environment('requireAction').run(activities.requireAction, { ...input, round: 0, outcome });
      expect(await callModel(input, 0)).toEqual({ ...outcome, inputTokens: 0, outputTokens: 0 });
    });
  });

  describe('requireAction', () => {
    it('stores the calls and required_action, bills round 0 once and answers waiting; a second call changes nothing', async () => {
      const { runId, input, outcome } = await askForTool();
      const before = await balance();
      const first = await environment('requireAction').run(activities.requireAction, { ...input, round: 0, outcome });
      expect(first).toEqual({ state: 'waiting', remainingMs: expect.any(Number) });
      const { remainingMs } = first as { remainingMs: number };
      // What the database's clock says is left of the wait: all of it, less the time the activity took.
      expect(remainingMs).toBeGreaterThan(WAIT_MS - 5000);
      expect(remainingMs).toBeLessThanOrEqual(WAIT_MS);

      const waiting = await row(runId);
      expect(waiting).toMatchObject({
        status: 'requires_action',
        rounds: 1,
        transcript: [{ calls: outcome.calls }],
        required_action: {
          type: 'submit_tool_outputs',
          submit_tool_outputs: {
            tool_calls: [
              {
                id: outcome.calls[0].id,
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
              },
            ],
          },
        },
        usage: {
          prompt_tokens: outcome.inputTokens,
          completion_tokens: outcome.outputTokens,
          total_tokens: outcome.inputTokens + outcome.outputTokens,
        },
      });
      expect(waiting.expires_at).toBeInstanceOf(Date);
      const billed = await debits(runId, 0);
      expect(billed).toHaveLength(1);
      expect(billed[0]).toMatchObject({
        type: 'debit',
        account_id: suite.accountId,
        metadata: { service: 'runs', run_id: runId, model: 'dev-echo' },
      });
      expect(Number(billed[0].amount)).toBeGreaterThan(0);
      expect(await balance()).toBe(before - Number(billed[0].amount));

      // A retried attempt (the worker died after the commit): the same wait, nothing written twice.
      const second = await environment('requireAction').run(activities.requireAction, { ...input, round: 0, outcome });
      expect(second).toEqual({ state: 'waiting', remainingMs: expect.any(Number) });
      expect((second as { remainingMs: number }).remainingMs).toBeLessThanOrEqual(remainingMs);
      expect((second as { remainingMs: number }).remainingMs).toBeGreaterThan(remainingMs - 2000);
      expect(await debits(runId, 0)).toHaveLength(1);
      expect(await balance()).toBe(before - Number(billed[0].amount));
      const again = await row(runId);
      expect(again).toMatchObject({
        status: 'requires_action',
        rounds: 1,
        transcript: [{ calls: outcome.calls }],
        usage: waiting.usage,
      });
      expect(again.expires_at).toEqual(waiting.expires_at);
    });

    // A cancel that lands after the vendor answered with tool calls but before requireAction: the calls are not
    // stored, the tokens the vendor reported are still billed (api-decisions 10, 12).
    it('bills a tool-call round whose Run was cancelled before requireAction (the calls the flow makes)', async () => {
      const { threadId, runId, input, outcome } = await askForTool('Lima');
      await call('POST', `/v2/threads/${threadId}/runs/${runId}/cancel`);
      expect(await environment('requireAction').run(activities.requireAction, { ...input, round: 0, outcome })).toEqual(
        { state: 'ended' },
      );
      expect(
        await environment('finalizeRun').run(activities.finalizeRun, {
          ...input,
          round: 1,
          ending: { kind: 'cancelled' as const },
        }),
      ).toEqual({ status: 'cancelled' });
      expect(await debits(runId, 0)).toHaveLength(1);
      expect((await row(runId)).usage).toMatchObject({
        prompt_tokens: outcome.inputTokens,
        completion_tokens: outcome.outputTokens,
      });
    });
  });

  describe('collectToolOutputs', () => {
    it('answers waiting until the outputs are submitted over the API, then submitted; round 1 answers with them', async () => {
      const { threadId, runId, input, outcome } = await askForTool();
      await environment('requireAction').run(activities.requireAction, { ...input, round: 0, outcome });
      expect(
        await environment('collectToolOutputs').run(activities.collectToolOutputs, { ...input, round: 0 }),
      ).toEqual({ state: 'waiting', remainingMs: expect.any(Number) });

      const submitted = await call('POST', `/v2/threads/${threadId}/runs/${runId}/submit_tool_outputs`, {
        tool_outputs: [{ tool_call_id: outcome.calls[0].id, output: 'sunny' }],
      });
      expect(submitted.status).toBe(200);
      expect(submitted.body.status).toBe('in_progress');
      expect(
        await environment('collectToolOutputs').run(activities.collectToolOutputs, { ...input, round: 0 }),
      ).toEqual({ state: 'submitted' });

      const answer = await callModel(input, 1);
      expect(answer).toMatchObject({ kind: 'message', status: 'completed', text: 'Tool get_weather returned: sunny' });
      const final = await environment('finalizeRun').run(activities.finalizeRun, {
        ...input,
        round: 1,
        ending: answer as Exclude<ModelOutcome, ToolCallsOutcome>,
      });
      expect(final).toEqual({ status: 'completed' });
      expect((await row(runId)).rounds).toBe(2);
      // One debit per vendor call.
      expect(await debits(runId, 0)).toHaveLength(1);
      expect(await debits(runId, 1)).toHaveLength(1);
      expect((await messages(threadId)).map((message) => [message.role, message.content[0].text])).toEqual([
        ['user', '/call get_weather {"city":"Paris"}'],
        ['assistant', 'Tool get_weather returned: sunny'],
      ]);
    });

    it("a late re-run of an earlier round's wait answers submitted once a later round is waiting (it must not end the Run)", async () => {
      const { threadId, runId, input, outcome } = await askForTool();
      await environment('requireAction').run(activities.requireAction, { ...input, round: 0, outcome });
      expect(
        (
          await call('POST', `/v2/threads/${threadId}/runs/${runId}/submit_tool_outputs`, {
            tool_outputs: [{ tool_call_id: outcome.calls[0].id, output: 'sunny' }],
          })
        ).status,
      ).toBe(200);
      const secondRound = {
        ...outcome,
        calls: [{ ...outcome.calls[0], id: 'call_round_1' }],
        inputTokens: 0,
        outputTokens: 0,
      };
      await environment('requireAction').run(activities.requireAction, { ...input, round: 1, outcome: secondRound });
      expect((await row(runId)).status).toBe('requires_action');
      expect(
        await environment('collectToolOutputs').run(activities.collectToolOutputs, { ...input, round: 0 }),
      ).toEqual({ state: 'submitted' });
      expect(
        await environment('collectToolOutputs').run(activities.collectToolOutputs, { ...input, round: 1 }),
      ).toEqual({ state: 'waiting', remainingMs: expect.any(Number) });
    });

    it('answers expired once the wait ran out; finalizeRun then ends the Run expired and refuses late outputs', async () => {
      const { threadId, runId, input, outcome } = await askForTool('Oslo');
      expect(await environment('requireAction').run(shortWait.requireAction, { ...input, round: 0, outcome })).toEqual({
        state: 'waiting',
        remainingMs: expect.any(Number),
      });
      await new Promise((resolve) => setTimeout(resolve, 1200));
      expect(
        await environment('collectToolOutputs').run(activities.collectToolOutputs, { ...input, round: 0 }),
      ).toEqual({ state: 'expired' });
      expect(
        await environment('finalizeRun').run(activities.finalizeRun, {
          ...input,
          round: 1,
          ending: { kind: 'expired' as const },
        }),
      ).toEqual({ status: 'expired' });
      const expired = await row(runId);
      expect(expired).toMatchObject({
        status: 'expired',
        rounds: 1,
        required_action: null,
        last_error: { code: 'run.expired' },
      });
      expect(expired.failed_at).toBeInstanceOf(Date);
      // Round 0 was billed by requireAction; the expiry bills nothing more.
      expect(await debits(runId, 0)).toHaveLength(1);
      expect(await debits(runId, 1)).toHaveLength(0);
      const late = await call('POST', `/v2/threads/${threadId}/runs/${runId}/submit_tool_outputs`, {
        tool_outputs: [{ tool_call_id: outcome.calls[0].id, output: 'late' }],
      });
      expect(late.status).toBe(400);
    });

    it('answers ended for a Run cancelled while it waited', async () => {
      const { threadId, runId, input, outcome } = await askForTool();
      await environment('requireAction').run(activities.requireAction, { ...input, round: 0, outcome });
      await call('POST', `/v2/threads/${threadId}/runs/${runId}/cancel`);
      expect(
        await environment('collectToolOutputs').run(activities.collectToolOutputs, { ...input, round: 0 }),
      ).toEqual({ state: 'ended' });
    });
  });

  describe('finalizeRun', () => {
    it('appends the assistant message once, with one debit, even when called twice', async () => {
      const { threadId, runId, input } = await createRun('remember this');
      await startRun(input);
      const outcome = await callModel(input, 0);
      expect(outcome).toMatchObject({ kind: 'message', text: 'remember this', outputTokens: 2 });
      const ending = outcome as Exclude<ModelOutcome, ToolCallsOutcome>;
      const before = await balance();

      const first = await environment('finalizeRun').run(activities.finalizeRun, { ...input, round: 0, ending });
      const second = await environment('finalizeRun').run(activities.finalizeRun, { ...input, round: 0, ending });
      expect(first).toEqual({ status: 'completed' });
      expect(second).toEqual(first);

      const final = await row(runId);
      expect(final).toMatchObject({
        status: 'completed',
        rounds: 1,
        required_action: null,
        last_error: null,
        usage: { completion_tokens: 2 },
      });
      expect(final.completed_at).toBeInstanceOf(Date);
      const billed = await debits(runId, 0);
      expect(billed).toHaveLength(1);
      expect(await balance()).toBe(before - Number(billed[0].amount));
      const thread = await messages(threadId);
      expect(thread.map((message) => [message.role, message.content[0].text, message.run_id])).toEqual([
        ['user', 'remember this', null],
        ['assistant', 'remember this', runId],
      ]);
    });

    it('an answer that arrives after an API cancel: the cancel wins, the tokens are billed, nothing is appended', async () => {
      const { threadId, runId, input } = await createRun('answered too late');
      await startRun(input);
      const ending = (await callModel(input, 0)) as Exclude<ModelOutcome, ToolCallsOutcome>;
      expect((await call('POST', `/v2/threads/${threadId}/runs/${runId}/cancel`)).body.status).toBe('cancelling');
      expect(await environment('finalizeRun').run(activities.finalizeRun, { ...input, round: 0, ending })).toEqual({
        status: 'cancelled',
      });
      expect(await row(runId)).toMatchObject({
        status: 'cancelled',
        last_error: null,
        usage: { completion_tokens: 3 },
      });
      expect(await debits(runId, 0)).toHaveLength(1);
      expect((await messages(threadId)).map((message) => message.role)).toEqual(['user']);
    });

    it('a cancelled ending after an API cancel: cancelled, no message, no debit', async () => {
      const { threadId, runId, input } = await createRun('/delay 100 /words 200');
      await startRun(input);
      await call('POST', `/v2/threads/${threadId}/runs/${runId}/cancel`);
      expect(
        await environment('finalizeRun').run(activities.finalizeRun, {
          ...input,
          round: 0,
          ending: { kind: 'cancelled' as const },
        }),
      ).toEqual({ status: 'cancelled' });
      const final = await row(runId);
      expect(final.status).toBe('cancelled');
      expect(final.cancelled_at).toBeInstanceOf(Date);
      expect(await debits(runId, 0)).toHaveLength(0);
      expect((await messages(threadId)).map((message) => message.role)).toEqual(['user']);
    });

    it('a Run already final reports its stored status and changes nothing', async () => {
      const { runId, input } = await createRun('once');
      await startRun(input);
      const ending = (await callModel(input, 0)) as Exclude<ModelOutcome, ToolCallsOutcome>;
      await environment('finalizeRun').run(activities.finalizeRun, { ...input, round: 0, ending });
      expect(
        await environment('finalizeRun').run(activities.finalizeRun, {
          ...input,
          round: 0,
          ending: { kind: 'cancelled' as const },
        }),
      ).toEqual({ status: 'completed' });
      expect((await row(runId)).status).toBe('completed');
      expect(await debits(runId, 0)).toHaveLength(1);
    });
  });

  // Last: only these activity calls ran the Runs above.
  it('left every Run job to these tests: the stopped engine claimed none', async () => {
    const jobs = await suite.app.db
      .selectFrom('jobs')
      .select(['status', 'attempts'])
      .where('kind', '=', 'run')
      .execute();
    expect(jobs.length).toBeGreaterThan(10);
    expect(jobs.filter((job) => job.status !== 'pending' || job.attempts > 0)).toEqual([]);
  });
});
