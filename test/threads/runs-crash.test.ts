import { openDatabase } from '../../src/db/database';
import { startFakeOpenAI } from '../fakes';
import { pollUntil, wordList } from '../responses/helpers';
import {
  callServer as call,
  newServerAccount,
  stopServer,
  useServerProcesses,
  type ServerProcess as Server,
  type ServerStorage,
} from '../support/crash-server';
import { postgresUrl } from '../support/harness';

/**
 * A server killed (SIGKILL) while a legacy Run is in flight, then started again on the same storage (the PGlite
 * data folder, or the same Postgres schema), as test/responses/crash-restart.test.ts does for Responses: the Run
 * is never left stuck, is never billed twice for one vendor call (operation key `run:<id>:<round>`), and never
 * gets two assistant messages.
 */
const FINAL = ['completed', 'incomplete', 'failed', 'cancelled', 'expired'];

/** Runs have no event stream: poll. */
function pollRun(
  server: Server,
  auth: Record<string, string>,
  threadId: string,
  runId: string,
  accept: (run: any) => boolean,
  timeoutMs: number,
) {
  return pollUntil(
    async () => (await call(server, 'GET', `/v2/threads/${threadId}/runs/${runId}`, undefined, auth)).body,
    accept,
    timeoutMs,
  );
}

/**
 * What the storage holds for a Run once no server runs on it (PGlite is single-process, so it is opened only
 * after the last server stopped): its debits, the thread's messages it appended, its job row.
 */
async function storedFor(storage: ServerStorage, runId: string) {
  const handle = await openDatabase(
    { url: postgresUrl, poolSize: 2, preparedStatements: false, dataDir: storage.dataDir } as Parameters<
      typeof openDatabase
    >[0],
    { schema: storage.schema },
  );
  try {
    const { db } = handle;
    const all = await db
      .selectFrom('ledger_transactions')
      .select(['operation_key', 'amount', 'cost', 'metadata', 'usage'])
      .where('type', '=', 'debit')
      .orderBy('operation_key')
      .execute();
    // The debits under the Run's per-round keys, and every debit naming the Run (none may have escaped those keys).
    const debits = all.filter((row) => row.operation_key?.startsWith(`run:${runId}:`));
    const byMetadata = all.filter((row) => (row.metadata as { run_id?: string } | null)?.run_id === runId);
    const messages = await db
      .selectFrom('thread_messages')
      .select(['id', 'role', 'content'])
      .where('run_id', '=', runId)
      .execute();
    const job = await db
      .selectFrom('jobs')
      .select(['status', 'attempts', 'last_error'])
      .where('id', '=', runId)
      .executeTakeFirst();
    return { debits, byMetadata, messages, job };
  } finally {
    await handle.close();
  }
}

describe('a legacy Run across a crash of its server', () => {
  const servers = useServerProcesses('switchyard-run-crash-');

  /**
   * On `server`: an account, an assistant of `model` (with `tools`, `instructions`), a thread of one user message
   * `content`, and a Run of it; answers the key's headers and the ids.
   */
  async function startRun(
    server: Server,
    content: string,
    assistant: { model?: string; tools?: unknown[]; instructions?: string } = {},
  ) {
    const { auth } = await newServerAccount(server, { name: 'run-crash', balance: 1_000_000 });
    const created = await call(
      server,
      'POST',
      '/v2/assistants',
      { model: 'dev-echo', name: 'Crash', ...assistant },
      auth,
    );
    expect(created.status).toBe(200);
    const thread = await call(server, 'POST', '/v2/threads', { messages: [{ role: 'user', content }] }, auth);
    const run = await call(
      server,
      'POST',
      `/v2/threads/${thread.body.id}/runs`,
      { assistant_id: created.body.id },
      auth,
    );
    expect([run.status, run.body.error]).toEqual([200, undefined]);
    return {
      auth,
      assistantId: created.body.id as number,
      threadId: thread.body.id as string,
      runId: run.body.id as string,
    };
  }

  const lookup = (properties?: object) => ({
    type: 'function',
    function: { name: 'lookup', parameters: { type: 'object', ...(properties ? { properties } : {}) } },
  });
  type RunIds = { threadId: string; runId: string };
  const runEnd = (server: Server, auth: Record<string, string>, ids: RunIds, timeoutMs: number) =>
    pollRun(server, auth, ids.threadId, ids.runId, (current) => FINAL.includes(current.status), timeoutMs);
  const messagesOf = async (server: Server, auth: Record<string, string>, ids: RunIds) =>
    (await call(server, 'GET', `/v2/threads/${ids.threadId}/messages?order=asc`, undefined, auth)).body.data as any[];
  const submitOutputs = (server: Server, auth: Record<string, string>, ids: RunIds, body: unknown) =>
    call(server, 'POST', `/v2/threads/${ids.threadId}/runs/${ids.runId}/submit_tool_outputs`, body, auth);
  const waitForAction = (server: Server, auth: Record<string, string>, ids: RunIds, timeoutMs = 10_000) =>
    pollRun(
      server,
      auth,
      ids.threadId,
      ids.runId,
      (current) => current.status === 'requires_action' || FINAL.includes(current.status),
      timeoutMs,
    );

  it('a Run killed mid-generation is not left stuck: it ends, billed at most once per round, with at most one answer', async () => {
    const first = await servers.start();
    const { auth, assistantId, ...ids } = await startRun(first, '/delay 50 /words 400');
    // 400 words 50 ms apart: some 20 s of generation, well under way when the process dies.
    const started = await pollRun(
      first,
      auth,
      ids.threadId,
      ids.runId,
      (current) => current.status !== 'queued',
      10_000,
    );
    expect(started.status).toBe('in_progress');

    await stopServer(first, 'SIGKILL');
    const second = await servers.start();

    // Not stuck: it ends within a bound (a full re-run of the generation, plus an expired lease on Postgres).
    const run = await runEnd(second, auth, ids, 60_000);
    expect(['completed', 'failed']).toContain(run.status);
    const messages = await messagesOf(second, auth, ids);
    const answers = messages.filter((message) => message.run_id === ids.runId);
    expect(answers.length).toBeLessThanOrEqual(1);
    if (run.status === 'completed') {
      // Nothing of it reached a client, so it ran again from the start: the whole answer, once.
      expect(answers.map((message) => message.content[0].text)).toEqual([wordList(400)]);
      expect(run.usage).toMatchObject({ completion_tokens: 400 });
    } else {
      expect(answers).toEqual([]);
      expect(run.last_error).toEqual({ code: expect.any(String), message: expect.any(String) });
    }
    expect(messages.map((message) => message.role)).toEqual(
      run.status === 'completed' ? ['user', 'assistant'] : ['user'],
    );
    // The thread is free again (the Run no longer holds it active).
    const next = await call(
      second,
      'POST',
      `/v2/threads/${ids.threadId}/runs`,
      { assistant_id: assistantId, additional_messages: [{ role: 'user', content: 'after the crash' }] },
      auth,
    );
    expect([next.status, next.body.error]).toEqual([200, undefined]);
    expect(
      (await pollRun(second, auth, ids.threadId, next.body.id, (current) => FINAL.includes(current.status), 15_000))
        .status,
    ).toBe('completed');
    await stopServer(second, 'SIGTERM');

    const stored = await storedFor(servers.storage, ids.runId);
    const keys = stored.debits.map((debit) => debit.operation_key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(stored.byMetadata.map((debit) => debit.operation_key).sort()).toEqual(keys);
    if (run.status === 'completed') {
      expect(keys).toEqual([`run:${ids.runId}:0`]);
      expect(Number(stored.debits[0].cost)).toBeCloseTo(run.usage.cost, 9);
    }
    expect(stored.messages.length).toBeLessThanOrEqual(1);
    expect(stored.job?.status).toBe('completed');
  }, 120_000);

  it('a Run waiting in requires_action survives a crash: submit_tool_outputs after the restart completes it, one debit per round', async () => {
    const first = await servers.start();
    const { auth, ...ids } = await startRun(first, '/call lookup {"q":1}', {
      tools: [lookup({ q: { type: 'integer' } })],
    });
    const waiting = await waitForAction(first, auth, ids);
    expect(waiting.status).toBe('requires_action');
    const toolCall = waiting.required_action.submit_tool_outputs.tool_calls[0];
    expect(toolCall.function).toEqual({ name: 'lookup', arguments: '{"q":1}' });

    await stopServer(first, 'SIGKILL');
    const second = await servers.start();

    // Still waiting after the restart, for the same call, with the same deadline.
    const after = (await call(second, 'GET', `/v2/threads/${ids.threadId}/runs/${ids.runId}`, undefined, auth)).body;
    expect(after).toMatchObject({
      status: 'requires_action',
      required_action: waiting.required_action,
      expires_at: waiting.expires_at,
      usage: waiting.usage,
    });

    const submitted = await submitOutputs(second, auth, ids, {
      tool_outputs: [{ tool_call_id: toolCall.id, output: 'found-1' }],
    });
    expect([submitted.status, submitted.body.error]).toEqual([200, undefined]);
    const run = await runEnd(second, auth, ids, 30_000);
    expect([run.status, run.last_error]).toEqual(['completed', null]);
    const messages = await messagesOf(second, auth, ids);
    expect(messages.map((message) => [message.role, message.content[0].text, message.run_id])).toEqual([
      ['user', '/call lookup {"q":1}', null],
      ['assistant', 'Tool lookup returned: found-1', ids.runId],
    ]);
    await stopServer(second, 'SIGTERM');

    const stored = await storedFor(servers.storage, ids.runId);
    // The round that asked for the tool and the round that answered: one debit each.
    expect(stored.debits.map((debit) => debit.operation_key)).toEqual([`run:${ids.runId}:0`, `run:${ids.runId}:1`]);
    expect(stored.byMetadata).toHaveLength(2);
    expect(stored.messages).toHaveLength(1);
    expect(stored.job?.status).toBe('completed');
  }, 90_000);

  it('a Run killed during the vendor call that asks for a tool runs that call again, then waits, completes, one debit per round', async () => {
    const first = await servers.start();
    const { auth, ...ids } = await startRun(first, '/delay 3000 /call lookup {"q":3}', {
      tools: [lookup({ q: { type: 'integer' } })],
    });
    // The vendor takes 3 s before it answers with the call: the process dies in the middle of it.
    const started = await pollRun(
      first,
      auth,
      ids.threadId,
      ids.runId,
      (current) => current.status !== 'queued',
      10_000,
    );
    expect(started.status).toBe('in_progress');

    await stopServer(first, 'SIGKILL');
    const second = await servers.start();

    const waiting = await waitForAction(second, auth, ids, 30_000);
    expect(waiting.status).toBe('requires_action');
    const toolCall = waiting.required_action.submit_tool_outputs.tool_calls[0];
    expect(toolCall.function).toEqual({ name: 'lookup', arguments: '{"q":3}' });
    const submitted = await submitOutputs(second, auth, ids, {
      tool_outputs: [{ tool_call_id: toolCall.id, output: 'found-3' }],
    });
    expect([submitted.status, submitted.body.error]).toEqual([200, undefined]);
    const run = await runEnd(second, auth, ids, 30_000);
    expect([run.status, run.last_error]).toEqual(['completed', null]);
    const messages = await messagesOf(second, auth, ids);
    expect(messages.map((message) => [message.role, message.content[0].text])).toEqual([
      ['user', '/delay 3000 /call lookup {"q":3}'],
      ['assistant', 'Tool lookup returned: found-3'],
    ]);
    await stopServer(second, 'SIGTERM');

    const stored = await storedFor(servers.storage, ids.runId);
    expect(stored.debits.map((debit) => debit.operation_key)).toEqual([`run:${ids.runId}:0`, `run:${ids.runId}:1`]);
    expect(stored.byMetadata).toHaveLength(2);
    // The Run's usage is what was debited, round by round: the replayed round was not counted twice.
    const billed = stored.debits.map((debit) => debit.usage as { prompt_tokens: number; completion_tokens: number });
    expect(run.usage).toMatchObject({
      prompt_tokens: billed.reduce((sum, usage) => sum + usage.prompt_tokens, 0),
      completion_tokens: billed.reduce((sum, usage) => sum + usage.completion_tokens, 0),
    });
    expect(stored.messages).toHaveLength(1);
    expect(stored.job?.status).toBe('completed');
  }, 90_000);

  it('a Run waiting in requires_action across a crash can be cancelled after the restart: cancelled, its round billed once', async () => {
    const first = await servers.start();
    const { auth, ...ids } = await startRun(first, '/call lookup {"q":4}', { tools: [lookup()] });
    const waiting = await waitForAction(first, auth, ids);
    expect(waiting.status).toBe('requires_action');

    await stopServer(first, 'SIGKILL');
    const second = await servers.start();

    const cancelling = await call(
      second,
      'POST',
      `/v2/threads/${ids.threadId}/runs/${ids.runId}/cancel`,
      undefined,
      auth,
    );
    expect([cancelling.status, cancelling.body.status]).toEqual([200, 'cancelling']);
    const run = await runEnd(second, auth, ids, 20_000);
    expect(run).toMatchObject({
      status: 'cancelled',
      required_action: null,
      last_error: null,
      usage: waiting.usage,
      cancelled_at: expect.any(Number),
    });
    const messages = await messagesOf(second, auth, ids);
    expect(messages.map((message) => message.role)).toEqual(['user']);
    await stopServer(second, 'SIGTERM');

    const stored = await storedFor(servers.storage, ids.runId);
    expect(stored.debits.map((debit) => debit.operation_key)).toEqual([`run:${ids.runId}:0`]);
    expect(stored.byMetadata).toHaveLength(1);
    expect(stored.messages).toEqual([]);
    expect(stored.job?.status).toBe('completed');
  }, 90_000);

  it('a Run whose wait for tool outputs runs out across a crash ends expired after the restart, its round billed once', async () => {
    const env = { RUN_REQUIRES_ACTION_TIMEOUT_MS: '3000' };
    const first = await servers.start(env);
    const { auth, ...ids } = await startRun(first, '/call lookup {"q":2}', { tools: [lookup()] });
    const waiting = await waitForAction(first, auth, ids);
    expect(waiting.status).toBe('requires_action');

    await stopServer(first, 'SIGKILL');
    const second = await servers.start(env);

    // Nobody submits: the deadline is kept across the restart and the Run ends expired.
    const run = await runEnd(second, auth, ids, 20_000);
    expect(run).toMatchObject({ status: 'expired', required_action: null, usage: waiting.usage });
    expect(run.last_error).toEqual({ code: 'run.expired', message: expect.any(String) });
    const late = await submitOutputs(second, auth, ids, {
      tool_outputs: [{ tool_call_id: waiting.required_action.submit_tool_outputs.tool_calls[0].id, output: 'late' }],
    });
    expect([late.status, late.body.error?.code]).toEqual([400, 'run.not_requires_action']);
    const messages = await messagesOf(second, auth, ids);
    expect(messages.map((message) => message.role)).toEqual(['user']);
    await stopServer(second, 'SIGTERM');

    const stored = await storedFor(servers.storage, ids.runId);
    expect(stored.debits.map((debit) => debit.operation_key)).toEqual([`run:${ids.runId}:0`]);
    expect(stored.byMetadata).toHaveLength(1);
    expect(stored.messages).toEqual([]);
    expect(stored.job?.status).toBe('completed');
  }, 90_000);

  it('a Run killed during the vendor call after its tool outputs calls the vendor again with the same prompt and completes', async () => {
    // The vendor is the fake OpenAI server in this process; the service in its own process calls it over loopback.
    const fake = await startFakeOpenAI();
    try {
      const env = { OPENAI_API_KEY: 'sk-run-crash', OPENAI_BASE_URL: fake.baseURL, PROVIDER_MAX_RETRIES: '0' };
      fake.script(
        {
          toolCalls: [{ name: 'lookup', arguments: { q: 5 }, callId: 'call_crash_5' }],
          usage: { inputTokens: 100, outputTokens: 10 },
        },
        // The call with the tool output never answers: the process dies while it waits.
        { hang: true },
        { text: 'Found it after the crash.', usage: { inputTokens: 200, outputTokens: 7 } },
      );
      const first = await servers.start(env);
      const { auth, ...ids } = await startRun(first, 'Find five.', {
        model: 'gpt-4.1-mini',
        instructions: 'Look things up.',
        tools: [lookup({ q: { type: 'integer' } })],
      });
      const waiting = await waitForAction(first, auth, ids);
      expect(waiting.status).toBe('requires_action');
      const submitted = await submitOutputs(first, auth, ids, {
        tool_outputs: [{ tool_call_id: 'call_crash_5', output: 'five' }],
      });
      expect([submitted.status, submitted.body.error]).toEqual([200, undefined]);
      await fake.waitForRequests(2);

      await stopServer(first, 'SIGKILL');
      await fake.waitForClientAbort(1);
      const second = await servers.start(env);

      const run = await runEnd(second, auth, ids, 30_000);
      expect([run.status, run.last_error]).toEqual(['completed', null]);
      expect(run.usage).toMatchObject({ prompt_tokens: 300, completion_tokens: 17, total_tokens: 317 });
      const messages = await messagesOf(second, auth, ids);
      expect(messages.map((message) => [message.role, message.content[0].text])).toEqual([
        ['user', 'Find five.'],
        ['assistant', 'Found it after the crash.'],
      ]);
      // Round 1 was asked again (round 0, stored, was not), with the prompt the killed process had sent.
      expect(fake.requests).toHaveLength(3);
      expect(fake.requests[2].body.input).toEqual(fake.requests[1].body.input);
      expect(fake.requests[2].body.input).toEqual([
        { role: 'system', content: 'Look things up.' },
        { role: 'user', content: [{ type: 'input_text', text: 'Find five.' }] },
        { type: 'function_call', call_id: 'call_crash_5', name: 'lookup', arguments: '{"q":5}' },
        { type: 'function_call_output', call_id: 'call_crash_5', output: 'five' },
      ]);
      await stopServer(second, 'SIGTERM');

      const stored = await storedFor(servers.storage, ids.runId);
      expect(stored.debits.map((debit) => [debit.operation_key, debit.usage])).toEqual([
        [`run:${ids.runId}:0`, { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 }],
        [`run:${ids.runId}:1`, { prompt_tokens: 200, completion_tokens: 7, total_tokens: 207 }],
      ]);
      expect(stored.byMetadata).toHaveLength(2);
      expect(stored.messages).toHaveLength(1);
      expect(stored.job?.status).toBe('completed');
    } finally {
      await fake.close();
    }
  }, 90_000);
});
