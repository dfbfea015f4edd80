import pg from 'pg';
import {
  callServer,
  newServerAccount,
  stopServer,
  useServerProcesses,
  type ServerProcess,
} from '../support/crash-server';
import { ADMIN_TOKEN, postgresUrl, temporalAddress } from '../support/harness';
import { SseStream, TERMINAL_EVENTS } from '../support/sse';
import { pollUntil, wordList } from './helpers';

/**
 * A rolling deploy (issue 31), at jest scale: two server processes on one Postgres under a steady trickle of
 * background and streamed Responses; replica A gets SIGTERM (a 1 s grace, shorter than the answers, so some are
 * handed over) while its replacement starts, then the same for B. The load balancer is the test: a replica leaves
 * the rotation at its SIGTERM, a new one joins once it listens; a stream that ends at a hand-over resumes on a live
 * replica with `starting_after`. Every Response ends completed and whole (the streamed ones as their clients
 * assembled them too), each is billed once, nothing stays held, and no creation was refused.
 * The same at chaos scale: chaos/rolling-restart.ts. PGlite is one process by definition: Postgres only.
 * Under `npm run test:temporal` the replicas run on Temporal, each with the API and a worker polling one task queue
 * (`all`): a SIGTERM'd replica's worker stops polling, its activities run for the worker's grace, then are cancelled
 * and run again on the other replica's worker, which continues each generation from the events it stored.
 */
const onPostgres = postgresUrl ? describe : describe.skip;
if (!postgresUrl)
  console.info('rolling-restart.test.ts skipped: set TEST_DATABASE_URL (npm run test:postgres) to run it');

const WORDS = 50;
/** 50 words 40 ms apart: 2 s each, twice the grace. */
const input = (words: number) => `/delay 40 /words ${words}`;
/**
 * 100 ms on the embedded engine. Temporal serves fewer Responses a second here (bench/README.md, Temporal): at that pace
 * its queue grew by hundreds and the test outlasted its time (458 background and 94 streamed Responses, all completed
 * whole and billed once, in 225 s); at 500 ms it keeps up.
 */
const TICK_MS = temporalAddress ? 500 : 100;
const env = { SHUTDOWN_GRACE_MS: '1000', ...(temporalAddress ? { WORKER_SHUTDOWN_GRACE_MS: '1000' } : {}) };

/** Generations this replica resumed after a hand-over or a crash, from its /metrics. */
async function resumedBy(server: ServerProcess): Promise<number> {
  const text = await (
    await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  ).text();
  return [...text.matchAll(/^switchyard_generations_resumed_total\{[^}]*\} (\d+)/gm)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
}

onPostgres('a rolling restart of two replicas under load', () => {
  const servers = useServerProcesses('switchyard-rolling-', env, { engine: 'temporal' });
  const start = () => servers.start();

  it('every Response completed, whole, billed once; nothing held; no creation refused', async () => {
    /** The replicas in the load balancer's rotation. */
    // One after the other: the first migrates the new schema (two processes migrating it at once can fail).
    const rotation = [await start(), await start()];
    const { accountId, key, auth } = await newServerAccount(rotation[0], { name: 'rolling', balance: 10_000_000 });
    let turn = 0;
    const next = () => rotation[turn++ % rotation.length];

    /**
     * A streamed Response read as a client does: resumed on a live replica after the last event read until its final
     * event. `onText` is called at its first delta.
     */
    async function streamed(
      replica = next(),
      onText = () => {},
      words = WORDS,
    ): Promise<{ id: string; words: number; text: string; resumes: number }> {
      let stream = await SseStream.open(`${replica.baseUrl}/v2/responses`, {
        key,
        body: { model: 'dev-echo', input: input(words), stream: true, background: false },
      });
      expect(stream.status).toBe(200);
      const events = (await stream.readUntil((event) => event.event === 'response.output_text.delta')).map(
        (event) => event.data,
      );
      // Its first event names the Response, even when a hand-over ended the stream at once: without it the client
      // could not resume (on Temporal a SIGTERM used to end every stream before it).
      expect(events[0]?.type).toBe('response.created');
      onText();
      for (let resumes = 0; ; resumes++) {
        events.push(...(await stream.readAll()).map((event) => event.data));
        if (TERMINAL_EVENTS.includes(events.at(-1)?.type)) {
          expect([events[0].response.id, events.at(-1).type, events.at(-1).response.error]).toEqual([
            events[0].response.id,
            'response.completed',
            null,
          ]);
          expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
          const text = events
            .filter((event) => event.type === 'response.output_text.delta')
            .map((event) => event.delta)
            .join('');
          return { id: events[0].response.id, words, text, resumes };
        }
        expect(resumes).toBeLessThan(5);
        stream = await SseStream.open(
          `${next().baseUrl}/v2/responses/${events[0].response.id}?stream=true&starting_after=${events.at(-1).sequence_number}`,
          { key },
        );
      }
    }

    // The trickle: a background Response every tick and a streamed one every 5 ticks, to the replicas in rotation.
    const created: Array<Promise<{ status: number; body: any }>> = [];
    const streams: ReturnType<typeof streamed>[] = [];
    let loading = true;
    const load = (async () => {
      for (let tick = 0; loading; tick++) {
        const replica = next();
        created.push(
          // A request the replica dropped is a failure of the test, reported with the others (not a crash of jest).
          callServer(replica, 'POST', '/v2/responses', { model: 'dev-echo', input: input(WORDS) }, auth).catch(
            (error: Error) => ({ status: 0, body: { error: `${replica.baseUrl}: ${error.message} (${error.cause})` } }),
          ),
        );
        if (tick % 5 === 0) streams.push(streamed());
        await new Promise((resolve) => setTimeout(resolve, TICK_MS));
      }
    })();
    /** Until `count` more Responses were created: the load runs on its own clock, the test waits on it. */
    const loaded = (count: number) => {
      const target = created.length + count;
      return pollUntil(
        async () => created.length,
        (length) => length >= target,
        count * TICK_MS * 4 + 5000,
      );
    };

    let resumed = 0;
    await loaded(20);
    for (const old of [...rotation]) {
      // One stream surely open on it, 6 s long: it outlasts the grace and the process, so its client resumes it and
      // another replica resumes its generation.
      let reading!: () => void;
      const text = new Promise<void>((resolve) => (reading = resolve));
      const client = streamed(old, reading, 150);
      streams.push(client);
      // A stream that fails before its first delta fails the test here rather than leave it waiting.
      await Promise.race([text, client]);
      // SIGTERM: the replica leaves the rotation at once (its readiness reads draining) while its replacement starts.
      rotation.splice(rotation.indexOf(old), 1);
      resumed += await resumedBy(old);
      const exited = stopServer(old, 'SIGTERM');
      rotation.push(await start());
      expect(await exited).toBe(0);
      await loaded(10);
    }
    loading = false;
    await load;

    const replies = await Promise.all(created);
    expect(replies.filter((reply) => reply.status !== 200).map((reply) => [reply.status, reply.body.error])).toEqual(
      [],
    );
    const clients = await Promise.all(streams);
    expect(clients.filter((client) => client.text !== wordList(client.words))).toEqual([]);
    const words = new Map([
      ...replies.map((reply) => [reply.body.id as string, WORDS] as const),
      ...clients.map((client) => [client.id, client.words] as const),
    ]);
    const ids = [...words.keys()];
    const live = rotation[0];
    for (const [id, count] of words) {
      const stream = await SseStream.open(`${live.baseUrl}/v2/responses/${id}?stream=true`, { key });
      const final = (await stream.readAll()).at(-1)?.data;
      expect([id, final?.type, final?.response.output.map((item: any) => item.content?.[0]?.text)]).toEqual([
        id,
        'response.completed',
        [wordList(count)],
      ]);
    }
    for (const server of rotation) resumed += await resumedBy(server);
    // Generations were running at each hand-over: the restart was not too gentle to test anything.
    expect(resumed).toBeGreaterThanOrEqual(2);
    expect(clients.reduce((sum, client) => sum + client.resumes, 0)).toBeGreaterThanOrEqual(2);

    // Billed once each, nothing else; nothing held.
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try {
      const debits = await client.query(
        `select metadata->>'response_id' as id, count(*)::int as count, sum(amount)::int as amount from ${servers.storage.schema}.ledger_transactions where account_id = $1 and type = 'debit' group by 1`,
        [accountId],
      );
      expect(debits.rows.filter((row) => row.count !== 1)).toEqual([]);
      expect(debits.rows.map((row) => row.id).sort()).toEqual([...ids].sort());
      const balance = (await callServer(live, 'GET', '/v2/organization/balance', undefined, auth)).body;
      const spent = debits.rows.reduce((sum, row) => sum + row.amount, 0);
      expect(balance).toEqual({ balance: 10_000_000 - spent, available: 10_000_000 - spent });
    } finally {
      await client.end();
    }
    console.info(
      `rolling restart: ${replies.length} background, ${clients.length} streamed (${clients.reduce((sum, c) => sum + c.resumes, 0)} resumed by their clients), ${resumed} generations resumed after a hand-over`,
    );
  }, 90_000);
});
