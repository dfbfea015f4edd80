import http from 'node:http';
import { callServer, newServerAccount, useServerProcesses, type ServerProcess } from '../support/crash-server';
import { temporalAddress } from '../support/harness';
import { SseStream } from '../support/sse';
import { pollUntil, wordList } from './helpers';

/**
 * A deploy's SIGTERM (test/support/server-process.ts shuts down as `npm start` does): readiness turns to draining at
 * once while running generations and open streams go on; within the grace they finish there; past it they are handed
 * over: an open stream ends cleanly, and the next process continues each Response from what it had streamed, so every
 * one completes whole and is billed once. On the embedded engine, and under `npm run test:temporal` on Temporal (API
 * and worker in the process, SHUTDOWN_GRACE_MS and WORKER_SHUTDOWN_GRACE_MS alike).
 */
/** A readiness probe as a load balancer sends it: a new connection each time (a pooled one may just have been closed). */
function probe(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    http
      .get(url, { agent: false }, (reply) => {
        reply.resume();
        resolve(reply.statusCode!);
      })
      .once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

const isFinal = (event: any) => /^response\.(completed|incomplete|failed|cancelled)$/.test(event.type);

describe('SIGTERM: drain, then hand over', () => {
  const { start } = useServerProcesses('switchyard-drain-', {}, { engine: 'temporal' });
  /** The process's grace, and its worker's on Temporal. */
  const grace = (ms: number) => ({ SHUTDOWN_GRACE_MS: String(ms), WORKER_SHUTDOWN_GRACE_MS: String(ms) });

  async function account(server: ServerProcess) {
    return (await newServerAccount(server, { name: 'drain', balance: 100_000 })).auth;
  }

  const exited = (server: ServerProcess) =>
    new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));

  it('finishes what runs within the grace, answering readiness 503 meanwhile', async () => {
    const server = await start(grace(30_000));
    const auth = await account(server);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await callServer(server, 'POST', '/v2/responses', { model: 'dev-echo', input: '/delay 150 /words 20' }, auth))
          .body.id,
      );
    const stream = await SseStream.open(`${server.baseUrl}/v2/responses/${ids[0]}?stream=true`, {
      key: auth['x-auth-token'],
    });
    await stream.readUntil((event) => event.data.type === 'response.output_text.delta');
    const exit = exited(server);
    server.child.kill('SIGTERM');
    // On Temporal a draining worker takes no new task: its running activities finish here, and each workflow's next
    // step (the finalisation) runs on another worker, so a replacement starts beside it, as a deploy's surge does.
    // The embedded engine finishes its jobs itself.
    const replacement = temporalAddress ? start({}) : undefined;
    // Draining: not ready (a load balancer stops sending), still answering.
    for (;;) {
      const ready = await probe(`${server.baseUrl}/readyz`);
      if (ready === 503) break;
      expect(ready).toBe(200);
      await new Promise((resolve) => setImmediate(resolve));
    }
    // The stream runs to its final event in this process, then the process exits cleanly.
    const rest = await stream.readAll();
    expect(rest.at(-1)?.data.type).toBe('response.completed');
    expect(await exit).toBe(0);
    const next = (await replacement) ?? (await start({}));
    // Finished here before the exit; on Temporal their finalisations may still be running on the replacement.
    const read = (id: string) => callServer(next, 'GET', `/v2/responses/${id}`, undefined, auth);
    for (const id of ids) {
      const reply = temporalAddress
        ? await pollUntil(
            () => read(id),
            (reply) => !['queued', 'in_progress'].includes(reply.body.status),
          )
        : await read(id);
      expect(reply.body).toMatchObject({
        status: 'completed',
        output: [{ content: [{ text: Array.from({ length: 20 }, (_, i) => `w${i + 1}`).join(' ') }] }],
      });
    }
  }, 60_000);

  it('past the grace hands over: the stream ends cleanly, the next process completes every Response whole, billed once', async () => {
    const server = await start(grace(1000));
    const auth = await account(server);
    const words = Array.from({ length: 40 }, (_, i) => `w${i + 1}`).join(' ');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await callServer(server, 'POST', '/v2/responses', { model: 'dev-echo', input: '/delay 150 /words 40' }, auth))
          .body.id,
      );
    const stream = await SseStream.open(`${server.baseUrl}/v2/responses/${ids[0]}?stream=true`, {
      key: auth['x-auth-token'],
    });
    const seen = await stream.readUntil((event) => event.data.type === 'response.output_text.delta');
    const exit = exited(server);
    server.child.kill('SIGTERM');
    // The stream ends without a final event (not reset): the client resumes where it stopped.
    seen.push(...(await stream.readAll()));
    expect(seen.some((event) => isFinal(event.data))).toBe(false);
    expect(await exit).toBe(0);
    const last = seen.at(-1)!.data.sequence_number as number;

    const next = await start({});
    const resumed = await SseStream.open(`${next.baseUrl}/v2/responses/${ids[0]}?stream=true&starting_after=${last}`, {
      key: auth['x-auth-token'],
    });
    const after = (await resumed.readAll()).map((event) => event.data);
    const all = [...seen.map((event) => event.data), ...after];
    expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, index) => index));
    expect(
      all
        .filter((event) => event.type === 'response.output_text.delta')
        .map((event) => event.delta)
        .join(''),
    ).toBe(words);
    expect(after.at(-1).type).toBe('response.completed');
    for (const id of ids) {
      for (;;) {
        const reply = await callServer(next, 'GET', `/v2/responses/${id}`, undefined, auth);
        if (reply.body.status !== 'in_progress' && reply.body.status !== 'queued') {
          expect(reply.body).toMatchObject({
            status: 'completed',
            output: [{ status: 'completed', content: [{ text: words }] }],
          });
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const transactions = (await callServer(next, 'GET', '/v2/organization/transactions?limit=100', undefined, auth))
      .body.transactions as any[];
    const billed = transactions
      .filter((transaction) => transaction.type === 'debit')
      .map((transaction) => transaction.metadata.response_id);
    expect(billed.sort()).toEqual([...ids].sort());
  }, 90_000);
  // A hand-over is not an attempt that ended with its process (those are limited, DEFAULT_JOB_RETRY: five, so a job
  // that kills every process running it stops): deploys, however many during one long job, never use them up. On
  // Temporal each hand-over is an attempt of the generation's activity (GENERATION_ACTIVITY: three), not yet solved.
  // On PGlite it also found a process claiming its own running job again once its lease had lapsed (2 of 4 runs ended
  // failed, 'its event stream could not be stored': two attempts at once wrote the same events).
  (!temporalAddress ? it : it.skip)(
    'a Response handed over at more deploys than a job has attempts completes, whole, billed once',
    async () => {
      let server = await start(grace(300));
      const auth = await account(server);
      const key = auth['x-auth-token'];
      const id = (
        await callServer(server, 'POST', '/v2/responses', { model: 'dev-echo', input: '/delay 50 /words 400' }, auth)
      ).body.id as string;
      const seen: any[] = [];
      for (let deploy = 0; deploy < 7; deploy++) {
        // Running here: a delta came from this process, then its SIGTERM.
        const stream = await SseStream.open(
          `${server.baseUrl}/v2/responses/${id}?stream=true&starting_after=${seen.length - 1}`,
          { key },
        );
        seen.push(...(await stream.readUntil((event) => event.data.type === 'response.output_text.delta')));
        const exit = exited(server);
        server.child.kill('SIGTERM');
        seen.push(...(await stream.readAll()));
        expect(await exit).toBe(0);
        expect(seen.filter((event) => isFinal(event.data)).map((event) => [deploy, event.data.response.error])).toEqual(
          [],
        );
        server = await start(grace(300));
      }
      const stream = await SseStream.open(
        `${server.baseUrl}/v2/responses/${id}?stream=true&starting_after=${seen.length - 1}`,
        { key },
      );
      const all = [...seen, ...(await stream.readAll())].map((event) => event.data);
      expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, index) => index));
      expect(all.at(-1)).toMatchObject({ type: 'response.completed', response: { error: null } });
      expect(
        all
          .filter((event) => event.type === 'response.output_text.delta')
          .map((event) => event.delta)
          .join(''),
      ).toBe(wordList(400));
      const transactions = (await callServer(server, 'GET', '/v2/organization/transactions?limit=100', undefined, auth))
        .body.transactions as any[];
      expect(transactions.filter((row) => row.type === 'debit').map((row) => row.metadata.response_id)).toEqual([id]);
    },
    120_000,
  );
});
