import type { ChildProcess } from 'node:child_process';
import {
  api,
  ADMIN_TOKEN,
  ledgerColumns,
  ledgerOf,
  progress,
  signalled,
  startApi,
  startWorker,
  TEMPORAL_WORKERS,
  waitFinal,
  type Row,
  type Service,
  type Storage,
} from './service';

/**
 * A deploy as an operator runs one: two replicas of the API (each running the embedded engine) on one Postgres
 * under a steady load of background Responses and streamed ones, then a rolling restart: replica A gets SIGTERM
 * (it drains for SHUTDOWN_GRACE_MS, then hands over what still runs), a new A starts, then the same for B. Clients
 * send to whichever replica answers; a stream cut at a hand-over resumes on the other replica with
 * `starting_after`. Holds: every Response completed, its text whole (the stream a client assembled too), each
 * billed once, nothing held after. On PGlite (one process owns the database) the restart is of the one process.
 * Under `--temporal` the replicas are API processes and the workflows run in two worker processes, restarted in turn
 * after them the same way (WORKER_SHUTDOWN_GRACE_MS, then their activities run again on the other worker, which
 * continues each generation from the text it had stored).
 */
const WORDS = 60;
const INPUT = `/delay 40 /words ${WORDS}`;
const EXPECTED = Array.from({ length: WORDS }, (_, index) => `w${index + 1}`).join(' ');
/** Short, so that Responses are still running at the hand-over (a 60-word answer takes 2.4 s). */
const GRACE_MS = '1000';
/**
 * A background Response every tick (a streamed one every 5): 100 ms on the embedded engine; under `--temporal` 400 ms,
 * about what it serves on this machine (bench/README.md, Temporal), so the restarts meet running generations rather
 * than a queue.
 */
const TICK_MS = { embedded: 100, temporal: 400 };

export async function rollingRestart(storage: Storage): Promise<Row> {
  const env = { SHUTDOWN_GRACE_MS: GRACE_MS, WORKER_SHUTDOWN_GRACE_MS: GRACE_MS };
  const replicas = storage.schema ? 2 : 1;
  const tickMs = storage.temporal ? TICK_MS.temporal : TICK_MS.embedded;
  const live: Array<Omit<Service, 'workers'>> = [];
  for (let index = 0; index < replicas; index++) live.push(await startApi(storage, env));
  const workers: ChildProcess[] = storage.temporal
    ? await Promise.all(Array.from({ length: TEMPORAL_WORKERS }, () => startWorker(storage, env)))
    : [];
  const { key } = live[0]!;
  const resumed = { count: 0 };
  const ids: string[] = [];
  const streams: Array<Promise<{ id: string; text: string; resumes: number }>> = [];
  let creating = true;
  const failedCreations: string[] = [];

  // The load: a background Response every tick and a streamed one every 5 ticks, to any live replica.
  const load = (async () => {
    for (let tick = 0; creating; tick++) {
      const target = () => live[tick % live.length]!;
      void api({ ...target(), key, workers: [] }, 'POST', '/v2/responses', { model: 'dev-echo', input: INPUT }).then(
        (reply) => (reply.status === 200 ? ids.push(reply.body.id) : failedCreations.push(String(reply.status))),
        () => failedCreations.push('connection'),
      );
      if (tick % 5 === 0) streams.push(streamWithResume(live, key));
      await new Promise((resolve) => setTimeout(resolve, tickMs));
    }
  })();

  for (let index = 0; index < replicas; index++) {
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const old = live[index]!;
    resumed.count += await resumedCount(old.baseUrl);
    progress(`${storage.name}: rolling restart: SIGTERM to replica ${index + 1}`);
    const exited = signalled(old.child, 'SIGTERM');
    // A replacement starts while the old one drains, as an orchestrator's surge does; a single process cannot.
    if (replicas > 1) live[index] = await startApi(storage, env);
    await exited;
    if (replicas === 1) live[index] = await startApi(storage, env);
  }
  // Under Temporal, then the workers, one after the other, each replaced while it drains.
  for (let index = 0; index < workers.length; index++) {
    await new Promise((resolve) => setTimeout(resolve, 3000));
    progress(`${storage.name}: rolling restart: SIGTERM to worker ${index + 1}`);
    const stopped = stopWorker(workers[index]!);
    workers[index] = await startWorker(storage, env);
    resumed.count += await stopped;
  }
  await new Promise((resolve) => setTimeout(resolve, 3000));
  creating = false;
  await load;
  const streamed = (await Promise.all(streams)).filter((stream) => stream.id !== '');
  const service: Service = { ...live[0]!, key, workers: [] };
  const settled = await waitFinal(service, [...ids, ...streamed.map((stream) => stream.id)], key);
  for (const replica of live) resumed.count += await resumedCount(replica.baseUrl);

  const statuses = new Map<string, number>();
  let partial = 0;
  for (const id of ids) {
    const { body } = await api(service, 'GET', `/v2/responses/${id}`);
    statuses.set(body.status, (statuses.get(body.status) ?? 0) + 1);
    if (body.status !== 'completed' || body.output?.[0]?.content?.[0]?.text !== EXPECTED) partial++;
  }
  const brokenStreams = streamed.filter((stream) => stream.text !== EXPECTED).length;
  const ledger = await ledgerOf(service, key);
  for (const replica of live) await signalled(replica.child, 'SIGTERM');
  for (const worker of workers) resumed.count += await stopWorker(worker);
  return {
    database: storage.name,
    scenario: `rolling restart of ${replicas} ${replicas > 1 ? 'replicas' : 'process'}${workers.length > 0 ? ` and ${workers.length} workers` : ''} under load`,
    operations: ids.length + streamed.length,
    stuck: settled.stuck.length,
    lost: settled.lost.length + partial + brokenStreams,
    ...ledgerColumns(ledger),
    maxRecoveryMs: settled.ms,
    resumed: resumed.count,
    // A creation answered 5xx is a failure of the deploy; one cut with its connection is the client's to retry.
    overBound: failedCreations.some((status) => status.startsWith('5')),
    notes: [
      `${ids.length} background (${[...statuses].map(([status, count]) => `${count} ${status}`).join(', ')}), ${partial} not whole`,
      `${streamed.length} streamed, ${streamed.reduce((sum, stream) => sum + stream.resumes, 0)} resumes, ${brokenStreams} not whole`,
      `${failedCreations.length} creations refused or cut${failedCreations.length ? ` (${[...new Set(failedCreations)].join(', ')})` : ''}`,
      `${resumed.count} generations resumed after a hand-over`,
    ].join('; '),
  };
}

/**
 * SIGTERM to a worker process (bench/worker-process.ts): it drains, reports the generations it resumed (a worker has
 * no /metrics) and exits; answers that count.
 */
async function stopWorker(worker: ChildProcess): Promise<number> {
  let resumed = 0;
  worker.on('message', (message: { resumed?: number }) => (resumed = message.resumed ?? resumed));
  await signalled(worker, 'SIGTERM');
  return resumed;
}

/** The replica's count of generations resumed (continued, regenerated or rerun) since it started. */
async function resumedCount(baseUrl: string): Promise<number> {
  const text = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(
    (reply) => reply.text(),
    () => '',
  );
  return [...text.matchAll(/^switchyard_generations_resumed_total\{[^}]*\} (\d+)/gm)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
}

/**
 * A streamed background Response read as a client does: the text of its deltas assembled, and when the stream ends
 * before `response.completed` (a hand-over, a replica gone), read again from another replica after the last
 * sequence number seen.
 */
async function streamWithResume(
  live: Array<Omit<Service, 'workers'>>,
  key: string,
): Promise<{ id: string; text: string; resumes: number }> {
  let id = '';
  let text = '';
  let last = -1;
  let resumes = 0;
  // Patient as a client of a deploy is: a single process restarting leaves nobody to answer for a few seconds.
  const deadline = Date.now() + 60_000;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const replica = live[attempt % live.length]!;
    const request = id
      ? fetch(`${replica.baseUrl}/v2/responses/${id}?stream=true&starting_after=${last}`, {
          headers: { 'x-auth-token': key },
        })
      : fetch(`${replica.baseUrl}/v2/responses`, {
          method: 'POST',
          headers: { 'x-auth-token': key, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'dev-echo', input: INPUT, stream: true, background: false }),
        });
    const reply = await request.catch(() => undefined);
    if (!reply?.ok || !reply.body) {
      // A creation no replica answered was never made: the client's to send again, not a generation lost.
      if (!id && reply) return { id, text, resumes };
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    let buffer = '';
    let completed = false;
    try {
      for await (const chunk of reply.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += Buffer.from(chunk).toString('utf8');
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (!data) continue;
          const event = JSON.parse(data) as {
            type: string;
            sequence_number: number;
            delta?: string;
            response?: { id: string };
          };
          if (event.sequence_number <= last) continue;
          last = event.sequence_number;
          if (!id && event.response?.id) id = event.response.id;
          if (event.type === 'response.output_text.delta') text += event.delta ?? '';
          if (event.type === 'response.completed') completed = true;
        }
      }
    } catch {
      // The connection was cut: resume below.
    }
    if (completed || (id && text === EXPECTED)) break;
    if (id) resumes++;
  }
  return { id, text, resumes };
}
