import {
  callServer,
  newServerStorage,
  startServerProcess,
  type ServerProcess,
  type ServerStorage,
} from '../support/crash-server';
import { ADMIN_TOKEN, dropSchema } from '../support/harness';
import { SseStream } from '../support/sse';

/**
 * A server killed (SIGKILL) mid-generation and started again on the same storage: every Response resumes and
 * completes (one that had streamed part of its text is continued from it, each word once); none stays
 * queued/in_progress; nothing is debited twice.
 */
type Server = ServerProcess;
const call = callServer;
/** Reads a Response's event stream (data objects) until `stop(event)` is true or the stream ends. */
async function readEvents(server: Server, key: string, id: string, stop: (event: any) => boolean) {
  const stream = await SseStream.open(`${server.baseUrl}/v2/responses/${id}?stream=true`, { key });
  try {
    return (await stream.readUntil((event) => stop(event.data))).map((event) => event.data);
  } finally {
    stream.abort();
  }
}

const isFinal = (event: any) => /^response\.(completed|incomplete|failed|cancelled)$/.test(event.type);

describe('crash and restart', () => {
  // One storage for both cases: the second restarts on what the first left.
  let storage: ServerStorage;
  const startServer = (env: Record<string, string> = {}) => startServerProcess(storage, env);
  beforeAll(async () => {
    storage = await newServerStorage('switchyard-crash-');
  });
  afterAll(async () => {
    if (storage?.schema) await dropSchema(storage.schema);
  });

  it('resumes or cleanly fails every unfinished Response, never charging twice', async () => {
    const first = await startServer();
    let second: Server | undefined;
    try {
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const account = await call(first, 'POST', '/admin/accounts', { name: 'crash', balance: 100_000 }, admin);
      const key = (await call(first, 'POST', `/admin/accounts/${account.body.id}/keys`, {}, admin)).body.key as string;
      const auth = { 'x-auth-token': key };

      const done = await call(
        first,
        'POST',
        '/v2/responses',
        { model: 'dev-echo', input: 'finished before the crash', background: false },
        auth,
      );
      expect(done.body.status).toBe('completed');
      // Streaming output when the process dies: clients saw part of it, so the takeover continues it from there.
      const answer = Array.from({ length: 50 }, (_, index) => `word${index + 1}`).join(' ');
      const streaming = await call(
        first,
        'POST',
        '/v2/responses',
        { model: 'dev-echo', input: `/delay 200 ${answer}` },
        auth,
      );
      // No output yet when the process dies: it must run again and complete.
      const waiting = await call(
        first,
        'POST',
        '/v2/responses',
        {
          model: 'dev-echo',
          input: '/delay 3000 /call lookup {"q":1}',
          tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }],
        },
        auth,
      );
      await readEvents(first, key, streaming.body.id, (event) => event.type === 'response.output_text.delta');
      await readEvents(first, key, waiting.body.id, (event) => event.type === 'response.in_progress');
      // A streamed Response is written started by the process that runs it: no output yet, so it runs again too.
      const streamed = await SseStream.open(`${first.baseUrl}/v2/responses`, {
        key,
        method: 'POST',
        body: {
          model: 'dev-echo',
          input: '/delay 3000 /call lookup {"q":2}',
          tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }],
          stream: true,
          background: false,
        },
      });
      const streamedStart = (await streamed.readUntil((event) => event.data.type === 'response.in_progress')).map(
        (event) => event.data,
      );
      expect(streamedStart.map((event) => event.type)).toEqual(['response.created', 'response.in_progress']);
      const streamedId = streamedStart[0].response.id as string;
      streamed.abort();

      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));

      second = await startServer();
      // The whole stream, read again from its start: one message, each word once, sequence numbers without a gap.
      const streamingEvents = await readEvents(second, key, streaming.body.id, isFinal);
      const streamingEnd = streamingEvents.at(-1);
      const waitingEnd = (await readEvents(second, key, waiting.body.id, isFinal)).pop();
      expect(streamingEvents.map((event) => event.sequence_number)).toEqual(streamingEvents.map((_, index) => index));
      expect(streamingEnd.type).toBe('response.completed');
      expect(streamingEnd.response.output).toEqual([
        expect.objectContaining({
          type: 'message',
          status: 'completed',
          content: [expect.objectContaining({ text: answer })],
        }),
      ]);
      const deltas = streamingEvents.filter((event) => event.type === 'response.output_text.delta');
      expect(deltas.map((event) => event.delta).join('')).toBe(answer);
      expect(new Set(deltas.map((event) => event.item_id)).size).toBe(1);
      expect(streamingEvents.filter((event) => event.type === 'response.output_item.added')).toHaveLength(1);
      expect(waitingEnd.type).toBe('response.completed');
      expect(waitingEnd.response.output).toEqual([
        expect.objectContaining({ type: 'function_call', name: 'lookup', arguments: '{"q":1}' }),
      ]);
      const streamedEvents = await readEvents(second, key, streamedId, isFinal);
      expect(streamedEvents.map((event) => event.sequence_number)).toEqual(streamedEvents.map((_, index) => index));
      expect(streamedEvents.at(-1).type).toBe('response.completed');
      expect(streamedEvents.at(-1).response.output).toEqual([
        expect.objectContaining({ type: 'function_call', name: 'lookup', arguments: '{"q":2}' }),
      ]);

      const kept = await call(second, 'GET', `/v2/responses/${done.body.id}`, undefined, auth);
      expect(kept.body).toMatchObject({ status: 'completed', usage: done.body.usage });

      const transactions = (await call(second, 'GET', '/v2/organization/transactions?limit=200', undefined, auth)).body
        .transactions as any[];
      const debits = transactions.filter((transaction) => transaction.type === 'debit');
      const billed = debits.map((transaction) => transaction.metadata.response_id);
      expect(new Set(billed).size).toBe(billed.length);
      expect(billed.sort()).toEqual([done.body.id, streaming.body.id, waiting.body.id, streamedId].sort());
      const balance = (await call(second, 'GET', '/v2/organization/balance', undefined, auth)).body.balance;
      const credits = transactions
        .filter((transaction) => transaction.type === 'credit')
        .reduce((sum, t) => sum + t.amount, 0);
      expect(balance).toBe(credits - debits.reduce((sum, t) => sum + t.amount, 0));
    } finally {
      first.child.kill('SIGKILL');
      second?.child.kill('SIGTERM');
      if (second) await new Promise((resolve) => second!.child.once('exit', resolve));
    }
  }, 90_000);

  it('takes over the Responses of a killed process at once, not after their 30 s lease', async () => {
    // The same schema (or PGlite data directory) as the first case.
    const lease = { ENGINE_LEASE_MS: '30000' };
    const first = await startServer(lease);
    let second: Server | undefined;
    try {
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const account = await call(first, 'POST', '/admin/accounts', { name: 'takeover', balance: 100_000 }, admin);
      const key = (await call(first, 'POST', `/admin/accounts/${account.body.id}/keys`, {}, admin)).body.key as string;
      const streaming = await call(
        first,
        'POST',
        '/v2/responses',
        { model: 'dev-echo', input: `/delay 100 ${Array(30).fill('word').join(' ')}` },
        { 'x-auth-token': key },
      );
      await readEvents(first, key, streaming.body.id, (event) => event.type === 'response.output_text.delta');
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));

      second = await startServer(lease);
      const restartedAt = Date.now();
      // Postgres: the dead process's liveness lock went with its session; PGlite: a start resets every running job.
      // The continuation (at most 30 words, 100 ms apart) ends well before the 30 s lease would have.
      const end = (await readEvents(second, key, streaming.body.id, isFinal)).pop();
      expect(Date.now() - restartedAt).toBeLessThan(10_000);
      expect(end).toMatchObject({
        type: 'response.completed',
        response: { output: [{ content: [{ text: Array(30).fill('word').join(' ') }] }] },
      });
    } finally {
      first.child.kill('SIGKILL');
      second?.child.kill('SIGTERM');
      if (second) await new Promise((resolve) => second!.child.once('exit', resolve));
    }
  }, 60_000);
});
