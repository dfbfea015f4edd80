import { postTranscription, toneWav } from './audio/audio-fixtures';
import { startMcpTestServer, type McpTestServer } from './mcp/mcp-test-server';
import { pollUntil, wordList } from './responses/helpers';
import {
  callServer,
  newServerAccount,
  stopServer,
  useServerProcesses,
  type ServerProcess,
} from './support/crash-server';
import { SseStream } from './support/sse';
import { startReceiver, type Receiver } from './webhooks/receiver';

/**
 * Issue 31 for every kind of durable job that is not a plain Response: a Run, an asynchronous transcription and a
 * Response with an MCP tool loop, each in the middle of its work when its process gets a deploy's SIGTERM (with a
 * grace far shorter than the work, so the job is handed over) or a kill -9, then a new process on the same storage
 * (PGlite folder, or Postgres schema under `npm run test:postgres`). Each must end completed, whole (no output lost
 * or repeated, no tool called twice), billed once, with nothing left held, and its webhook delivered once.
 * Responses alone: test/responses/drain.test.ts and crash-restart.test.ts.
 */
const stops: Array<{
  stop: string;
  signal: 'SIGTERM' | 'SIGKILL';
  env: Record<string, string>;
  exitCode: number | null;
}> = [
  { stop: 'SIGTERM past the grace', signal: 'SIGTERM', env: { SHUTDOWN_GRACE_MS: '500' }, exitCode: 0 },
  { stop: 'kill -9', signal: 'SIGKILL', env: {}, exitCode: null },
];

const FINAL = ['completed', 'incomplete', 'failed', 'cancelled', 'expired'];
const isFinalEvent = (event: any) => /^response\.(completed|incomplete|failed|cancelled)$/.test(event.type);

describe.each(stops)('$stop in the middle of a job: the next process finishes it', ({ signal, env, exitCode }) => {
  // Loopback webhooks and MCP servers.
  const { start } = useServerProcesses('switchyard-restarts-', { ...env, OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' });
  let receiver: Receiver;
  let mcp: McpTestServer;

  beforeAll(async () => {
    receiver = await startReceiver();
    mcp = await startMcpTestServer();
  });
  afterAll(async () => {
    await receiver.close();
    await mcp.close();
  });

  /** Stops `server` with this case's signal; a SIGTERM'd process drains, hands over and exits cleanly. */
  async function interrupt(server: ServerProcess) {
    expect(await stopServer(server, signal)).toBe(exitCode);
  }

  /** The debits naming the job (`field` of their metadata), and the account's balance: nothing held, nothing else spent. */
  async function expectBilledOnce(server: ServerProcess, auth: Record<string, string>, field: string, id: string) {
    const transactions = (await callServer(server, 'GET', '/v2/organization/transactions?limit=200', undefined, auth))
      .body.transactions as any[];
    const debits = transactions.filter((row) => row.type === 'debit');
    expect(debits.map((row) => row.metadata[field])).toEqual([id]);
    const credits = transactions.filter((row) => row.type === 'credit').reduce((sum, row) => sum + row.amount, 0);
    const balance = (await callServer(server, 'GET', '/v2/organization/balance', undefined, auth)).body;
    expect(balance).toEqual({ balance: credits - debits[0].amount, available: credits - debits[0].amount });
    return debits[0];
  }

  /**
   * The webhooks `path` received: one once the job ended, and no other after the process stopped (a clean stop
   * sends what it still had to: a second delivery would have arrived by its exit).
   */
  async function expectDeliveredOnce(server: ServerProcess, path: string) {
    const hooks = () => receiver.requests.filter((request) => request.path === path);
    await pollUntil(
      async () => hooks().length,
      (count) => count > 0,
      10_000,
    );
    await stopServer(server, 'SIGTERM');
    expect(hooks()).toHaveLength(1);
    return JSON.parse(hooks()[0].body);
  }

  it('a Run: completed with its whole answer once, one debit, nothing held', async () => {
    const first = await start();
    const { auth } = await newServerAccount(first, { name: 'restart-run', balance: 1_000_000 });
    const assistant = await callServer(first, 'POST', '/v2/assistants', { model: 'dev-echo', name: 'Echo' }, auth);
    // 100 words 50 ms apart: 5 s of generation, ten times the grace.
    const thread = await callServer(
      first,
      'POST',
      '/v2/threads',
      { messages: [{ role: 'user', content: '/delay 50 /words 100' }] },
      auth,
    );
    const created = await callServer(
      first,
      'POST',
      `/v2/threads/${thread.body.id}/runs`,
      { assistant_id: assistant.body.id },
      auth,
    );
    expect([created.status, created.body.error]).toEqual([200, undefined]);
    const runPath = `/v2/threads/${thread.body.id}/runs/${created.body.id}`;
    const started = await pollUntil(
      () => callServer(first, 'GET', runPath, undefined, auth).then((reply) => reply.body),
      (run) => run.status !== 'queued',
    );
    expect(started.status).toBe('in_progress');
    await interrupt(first);

    const second = await start();
    const run = await pollUntil(
      () => callServer(second, 'GET', runPath, undefined, auth).then((reply) => reply.body),
      (current) => FINAL.includes(current.status),
      60_000,
    );
    expect([run.status, run.last_error]).toEqual(['completed', null]);
    expect(run.usage).toMatchObject({ completion_tokens: 100 });
    const messages = (
      await callServer(second, 'GET', `/v2/threads/${thread.body.id}/messages?order=asc`, undefined, auth)
    ).body.data as any[];
    expect(messages.map((message) => [message.role, message.content[0].text])).toEqual([
      ['user', '/delay 50 /words 100'],
      ['assistant', wordList(100)],
    ]);
    const debit = await expectBilledOnce(second, auth, 'run_id', created.body.id);
    expect(debit.usage).toMatchObject({ completion_tokens: 100 });
  }, 90_000);

  // After a SIGTERM this once found a job handed over still running while its process closed its database: the
  // transcription's read of its upload failed, the activity took that for the vendor's failure and the job ended
  // `failed` (seen once on PGlite in three runs). The engine's final stop now stops such jobs (their activities aborted,
  // no further step) and waits for their steps before the database closes.
  it('an asynchronous transcription: completed from its stored upload, one debit, nothing held, one callback', async () => {
    const first = await start();
    const { key, auth } = await newServerAccount(first, { name: 'restart-stt', balance: 1_000_000 });
    const path = `/callbacks/stt-${signal}`;
    // dev-stt-async waits 4 s (`/delay`) before decoding: processing when the process stops.
    const submitted = await postTranscription(
      first.baseUrl,
      key,
      { bytes: toneWav(3, [[1, 2]]), name: 'tones.wav' },
      {
        model: 'dev-stt-async',
        prompt: '/delay 4000',
        callback_url: receiver.url + path,
      },
    );
    expect(submitted.status).toBe(200);
    const id = submitted.body.request_id as string;
    const check = (server: ServerProcess) =>
      callServer(server, 'GET', `/v2/audio/transcription/check/${id}`, undefined, auth).then((reply) => reply.body);
    await pollUntil(
      () => check(first),
      (body) => body.status === 'processing',
    );
    await interrupt(first);
    expect(receiver.requests.filter((request) => request.path === path)).toEqual([]);

    const second = await start();
    expect(
      await pollUntil(
        () => check(second),
        (body) => ['completed', 'failed'].includes(body.status),
        30_000,
      ),
    ).toEqual({ request_id: id, status: 'completed' });
    const result = await callServer(second, 'GET', `/v2/audio/transcription/result/${id}`, undefined, auth);
    expect(result.body).toMatchObject({ duration: 3, segments: [{ start: 1, end: 2 }], usage: { cost: 3 } });
    expect(result.body.segments).toHaveLength(1);
    await expectBilledOnce(second, auth, 'request_id', id);
    expect(await expectDeliveredOnce(second, path)).toMatchObject({ request_id: id, status: 'completed' });
  }, 90_000);

  it('a Response with an MCP tool loop: completed, each tool called once, its events whole, one debit, nothing held, one webhook', async () => {
    mcp.reset();
    const first = await start();
    const { key, auth } = await newServerAccount(first, { name: 'restart-mcp', balance: 1_000_000, mcp_enabled: true });
    const path = `/hooks/mcp-${signal}`;
    // Turn 1 calls add; turn 2 waits 4 s (`/delay`) before calling shout: the process stops in that wait.
    const created = await callServer(
      first,
      'POST',
      '/v2/responses',
      {
        model: 'dev-echo',
        input: '/call add {"a": 1, "b": 2} /then /delay 4000 /call shout {"text": "again"}',
        tools: [{ type: 'mcp', server_label: 'calc', server_url: `${mcp.url}/mcp`, require_approval: 'never' }],
        metadata: { webhook_url: receiver.url + path },
      },
      auth,
    );
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const stream = await SseStream.open(`${first.baseUrl}/v2/responses/${id}?stream=true`, { key });
    // The second turn has started: the first call's result events are stored.
    const seen = await stream.readUntil((event) => event.event === 'response.mcp_call.completed');
    if (signal === 'SIGTERM') {
      // A deploy: the open stream ends cleanly at the hand-over, without a final event (the client resumes elsewhere).
      const [rest] = await Promise.all([stream.readAll(), interrupt(first)]);
      seen.push(...rest);
      expect(seen.some((event) => isFinalEvent(event.data))).toBe(false);
    } else {
      stream.abort();
      await interrupt(first);
    }
    expect(mcp.calls.map((call) => call.tool)).toEqual(['add']);

    const second = await start();
    // The client resumes after the last event it read, then the whole stream is read again from its start.
    const last = seen.at(-1)!.data.sequence_number as number;
    const after = (
      await (
        await SseStream.open(`${second.baseUrl}/v2/responses/${id}?stream=true&starting_after=${last}`, { key })
      ).readAll()
    ).map((event) => event.data);
    expect(after.at(-1).type).toBe('response.completed');
    const resumed = [...seen.map((event) => event.data), ...after];
    const whole = (
      await (await SseStream.open(`${second.baseUrl}/v2/responses/${id}?stream=true`, { key })).readAll()
    ).map((event) => event.data);
    expect(resumed).toEqual(whole);
    expect(whole.map((event) => event.sequence_number)).toEqual(whole.map((_, index) => index));
    const added = whole.filter((event) => event.type === 'response.output_item.added').map((event) => event.item.id);
    expect(new Set(added).size).toBe(added.length);
    const final = whole.at(-1).response;
    expect(final.status).toBe('completed');
    expect(final.output.map((item: any) => `${item.type}:${item.name ?? ''}:${item.output ?? ''}`)).toEqual([
      'mcp_list_tools::',
      'mcp_call:add:3',
      'mcp_call:shout:AGAIN',
      'message::',
    ]);
    expect(added).toEqual(final.output.map((item: any) => item.id));
    expect(mcp.calls.map((call) => call.tool)).toEqual(['add', 'shout']);
    const stored = (await callServer(second, 'GET', `/v2/responses/${id}`, undefined, auth)).body;
    expect(stored).toMatchObject({ status: 'completed', output: final.output, usage: final.usage });
    await expectBilledOnce(second, auth, 'response_id', id);
    expect(await expectDeliveredOnce(second, path)).toMatchObject({ response_id: id, status: 'completed' });
  }, 90_000);
});
