import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import {
  billedOperations,
  compareLoads,
  environmentFacts,
  measureCpu,
  stealMeter,
  percentile,
  round,
  rssMb,
  runLoad,
  runPaced,
  runRateLadder,
  scrapeMetrics,
  startBenchStack,
  summary,
  withPostgres,
  writeReport,
  type LoadTarget,
} from './support';

/**
 * Responses benchmark, on the embedded engine, against a zero-latency OpenAI fake (its Responses API):
 *  (a) synchronous Response overhead over the direct upstream call, 100 concurrent connections: saturated,
 *      paced at half the saturated throughput, and over a ladder of fixed rates (see bench/chat.ts);
 *  (b) streaming time-to-first-delta overhead, one request at a time;
 *  (c) background throughput: Responses created and completed per second;
 *  (d) memory (service RSS) with 1,000 concurrent open SSE streams.
 * The service runs in its own process (createRuntime + engine), billing and persistence on.
 */
export interface ResponsesBenchOptions {
  pglite: boolean;
  connections: number;
  durationSeconds: number;
  pin: boolean;
  streams: number;
  backgroundCount: number;
  postgresUrl: string;
  output: string;
  /** Which phases to run (default all): memory, sync, ttft, background. */
  phases?: ResponsesPhase[];
  /** Write a V8 CPU profile of the service process into this folder (`--cpu-prof`). */
  profileDir?: string;
  /** Write a heap snapshot of the service into this folder once every stream of the memory phase is open. */
  heapSnapshotDir?: string;
}

export const RESPONSES_PHASES = ['memory', 'sync', 'ttft', 'background'] as const;
export type ResponsesPhase = (typeof RESPONSES_PHASES)[number];

const MODEL = 'gpt-4.1-mini';
/** Issue 18's targets: RSS is ≤ 300 MB with 1,000 streams and ≤ 1 GB with 10,000. */
const TARGET = {
  syncAddedP50Ms: 2.5,
  syncAddedP99Ms: 15,
  ttftAddedP50Ms: 3,
  backgroundPerSecond: 1000,
  streamsRssMb: { 1000: 300, 10000: 1024 },
};
const rssTargetMb = (streams: number) => (streams > 1000 ? TARGET.streamsRssMb[10000] : TARGET.streamsRssMb[1000]);
const syncBudget = { p50: TARGET.syncAddedP50Ms, p99: TARGET.syncAddedP99Ms };
/** Fixed rates (requests/s) at which the synchronous overhead is also measured, and each step's length. */
const LADDER_RATES = [50, 100, 150, 200, 300, 400];
const LADDER_SECONDS = 5;

export async function runResponsesBench(options: ResponsesBenchOptions) {
  const steal = stealMeter();
  const stack = await startBenchStack({
    pin: options.pin,
    pglite: options.pglite,
    postgresUrl: options.postgresUrl,
    // Every open stream is a running job and a connection: room for all of them, and for the other phases.
    extraEnv: {
      ENGINE_CONCURRENCY: String(Math.max(256, options.streams + 64)),
      HTTP_MAX_CONNECTIONS: String(Math.max(10_000, options.streams + 1_000)),
    },
    nodeFlags: [
      ...(options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : []),
      ...(options.heapSnapshotDir
        ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${options.heapSnapshotDir}`]
        : []),
    ],
  });
  const phases = new Set(options.phases ?? RESPONSES_PHASES);
  const { upstream, base, key, service } = stack;
  const context: PhaseContext = {
    options,
    upstream,
    base,
    key,
    servicePid: service.child.pid!,
    serviceHeaders: { 'content-type': 'application/json', 'x-auth-token': key },
    directHeaders: { 'content-type': 'application/json', authorization: 'Bearer bench-upstream-key' },
    directBody: JSON.stringify({
      model: MODEL,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
      stream: true,
    }),
  };

  try {
    // Memory first, on a fresh process.
    const memory = phases.has('memory') ? await memoryPhase(context) : undefined;
    const sync = phases.has('sync') ? await syncPhase(context) : undefined;
    const ttft = phases.has('ttft') ? await ttftPhase(context) : undefined;
    const background = phases.has('background') ? await backgroundPhase(context) : undefined;
    const report = {
      benchmark: 'responses',
      engine: 'embedded',
      backend: stack.backend,
      upstream: 'shared OpenAI fake (test/fakes) in zero-latency mode (Responses API, streamed), own process',
      model: MODEL,
      cpu_layout: stack.cpuLayout,
      phases: [...phases],
      target: TARGET,
      sync,
      time_to_first_delta: ttft,
      background,
      memory,
      cpu_steal_seconds: steal(),
      environment: environmentFacts(),
    };
    writeReport(options.output, report);
    log(`wrote ${options.output}`);
    return report;
  } finally {
    await stack.stop();
  }
}

interface PhaseContext {
  options: ResponsesBenchOptions;
  upstream: string;
  base: string;
  key: string;
  servicePid: number;
  serviceHeaders: Record<string, string>;
  directHeaders: Record<string, string>;
  directBody: string;
}

/** (d) Service RSS with N open SSE streams (dev-echo paced so they stay open). */
async function memoryPhase({ options, base, servicePid, serviceHeaders }: PhaseContext) {
  log(`(d) ${options.streams} concurrent SSE streams`);
  const rssBefore = rssMb(servicePid);
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  // 60 words, one per second for 1,000 streams; beyond that slower (5 s apart for 10,000), so the streams outlast
  // their opening on a slow day and the deltas they all receive do not make the opening itself CPU-bound.
  const wordDelayMs = 1000 * Math.max(1, Math.round(options.streams / 2000));
  const longInput = `/delay ${wordDelayMs} ${Array.from({ length: 60 }, (_, index) => `word${index}`).join(' ')}`;
  const open = await Promise.all(
    Array.from({ length: options.streams }, () =>
      openStream(
        `${base}/v2/responses`,
        serviceHeaders,
        JSON.stringify({ model: 'dev-echo', input: longInput, background: false, stream: true }),
        agent,
      ),
    ),
  );
  // Every stream is open once it has received its first delta (creation runs at the service's pace). Each
  // lasts 60 word delays, so all are still open when the last one starts unless opening takes that long.
  const started = performance.now();
  const openedBy = started + 60 * wordDelayMs;
  const waiting = () => open.some((stream) => !stream.sawDelta() && !stream.failure());
  const receiving = () => open.filter((stream) => stream.sawDelta() && !stream.ended()).length;
  while (waiting() && performance.now() < openedBy) await new Promise((resolve) => setTimeout(resolve, 100));
  const secondsToOpen = round((performance.now() - started) / 1000, 1);
  const rssOpen = rssMb(servicePid);
  const heapOpen = await heapFigures(base);
  const streamsReceiving = receiving();
  if (options.heapSnapshotDir) await heapSnapshot(servicePid, options.heapSnapshotDir);
  // The same streams half a minute later (still open, still receiving). V8 collects the old generation in its
  // own time, so RSS at one moment depends on when it last did: the two samples show how much it moves.
  const settleMs = Math.min(30_000, Math.max(0, openedBy - performance.now() - 5 * wordDelayMs));
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  const rssSettled = rssMb(servicePid);
  const heapSettled = await heapFigures(base);
  const streamsStillOpen = receiving();
  const failures = open.map((stream) => stream.failure()).filter((failure): failure is string => failure !== undefined);
  const failureCounts = Object.fromEntries(
    [...new Set(failures)].map((failure) => [failure, failures.filter((item) => item === failure).length]),
  );
  for (const stream of open) stream.close();
  agent.destroy();
  // Disconnecting does not stop generation (by design); cancel them so they do not load the next phases.
  const ids = open.map((stream) => stream.id()).filter((id): id is string => Boolean(id));
  for (let index = 0; index < ids.length; index += 50) {
    await Promise.all(
      ids
        .slice(index, index + 50)
        .map((id) =>
          fetch(`${base}/v2/responses/${id}/cancel`, { method: 'POST', headers: serviceHeaders }).then((reply) =>
            reply.arrayBuffer(),
          ),
        ),
    );
  }
  const memory = {
    streams: options.streams,
    streams_receiving_deltas: streamsReceiving,
    seconds_to_open: secondsToOpen,
    failed: failureCounts,
    rss_mb_before: rssBefore,
    rss_mb_with_streams: rssOpen,
    kb_per_stream: round(((rssOpen - rssBefore) * 1024) / options.streams, 1),
    /** What of that RSS is V8's heap (committed, and in use at the last collection) and memory outside it. */
    heap_mb_with_streams: heapOpen,
    settled: {
      after_seconds: round(settleMs / 1000),
      streams_open: streamsStillOpen,
      rss_mb: rssSettled,
      heap_mb: heapSettled,
    },
  };
  log(`  ${JSON.stringify(memory)}`);
  // Met only with every stream open at once (a stream that ended or failed holds no memory).
  const target = rssTargetMb(options.streams);
  return {
    ...memory,
    target_mb: target,
    meets_target: streamsReceiving === options.streams && rssOpen <= target,
    meets_target_settled: streamsStillOpen === options.streams && rssSettled <= target,
  };
}

/** The service's V8 heap (committed and used) and external memory, in MB, from its Prometheus metrics. */
async function heapFigures(base: string): Promise<Record<string, number> | undefined> {
  try {
    const text = await scrapeMetrics(base);
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
    return {
      heap_total: round(value('nodejs_heap_size_total_bytes'), 1),
      heap_used: round(value('nodejs_heap_size_used_bytes'), 1),
      external: round(value('nodejs_external_memory_bytes'), 1),
    };
  } catch {
    return undefined;
  }
}

/**
 * Has the service (started with --heapsnapshot-signal) write a heap snapshot into `dir`, and waits for it. Writing
 * one stops the service for as long as it takes (over 30 s for a 1 GB heap, longer than a job lease: its running
 * Responses are then taken over and end `response.interrupted`), so what the phase measures after it is disturbed.
 */
async function heapSnapshot(pid: number, dir: string): Promise<void> {
  const before = new Set(fs.readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  const written = () => fs.readdirSync(dir).find((name) => name.endsWith('.heapsnapshot') && !before.has(name));
  // The file appears when writing starts; it is complete once its size stops changing.
  let name: string | undefined;
  let size = -1;
  const giveUpAt = performance.now() + 600_000;
  while (performance.now() < giveUpAt) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    name ??= written();
    if (!name) continue;
    const now = fs.statSync(path.join(dir, name)).size;
    if (now > 0 && now === size) {
      log(`  heap snapshot: ${path.join(dir, name)}`);
      return;
    }
    size = now;
  }
  log(`  no complete heap snapshot in ${dir} after 10 minutes`);
}

/** A synchronous Response must complete; returns its cost (what one background Response debits). */
async function sampleOne({ base, serviceHeaders }: PhaseContext): Promise<void> {
  const sample = await fetch(`${base}/v2/responses`, {
    method: 'POST',
    headers: serviceHeaders,
    body: JSON.stringify({ model: MODEL, input: 'Hello', background: false }),
  });
  const sampleBody = (await sample.json()) as { status: string };
  if (sample.status !== 200 || sampleBody.status !== 'completed')
    throw new Error(`sync sample failed: ${sample.status} ${JSON.stringify(sampleBody)}`);
}

/** (a) Synchronous overhead: saturated, paced at half of it, and over the ladder of fixed rates. */
async function syncPhase(context: PhaseContext) {
  const { options, base, upstream, servicePid, serviceHeaders, directHeaders, directBody } = context;
  const syncTarget: LoadTarget = {
    url: `${base}/v2/responses`,
    method: 'POST',
    headers: serviceHeaders,
    body: JSON.stringify({ model: MODEL, input: 'Hello', background: false }),
  };
  const directTarget: LoadTarget = {
    url: `${upstream}/v1/responses`,
    method: 'POST',
    headers: directHeaders,
    body: directBody,
  };
  await sampleOne(context);
  log('warming up');
  await runLoad(directTarget, { connections: 20, durationSeconds: 2 });
  await runLoad(syncTarget, { connections: 20, durationSeconds: 3 });
  const load = { connections: options.connections, durationSeconds: options.durationSeconds };
  log(`(a) synchronous, ${load.connections} connections`);
  const directSync = await runLoad(directTarget, load);
  log(`  direct  ${summary(directSync)}`);
  const serviceSync = await measureCpu(servicePid, () => runLoad(syncTarget, load));
  log(`  service ${summary(serviceSync)}`);
  const rate = Math.max(20, Math.floor(serviceSync.requestsPerSecond * 0.5));
  const directPaced = await runPaced(directTarget, { ...load, rate });
  const servicePaced = await measureCpu(servicePid, () => runPaced(syncTarget, { ...load, rate }));
  log(`  paced at ${rate}/s: direct ${summary(directPaced)}; service ${summary(servicePaced)}`);
  log(`  fixed rates: ${LADDER_RATES.join(', ')} requests/s, ${LADDER_SECONDS} s each`);
  const ladder = await runRateLadder(directTarget, syncTarget, {
    rates: LADDER_RATES,
    durationSeconds: LADDER_SECONDS,
    connections: load.connections,
    budget: syncBudget,
    servicePid,
    log,
  });
  log(`  fixed rates: the target holds at ${ladder.meets_target_at.join(', ') || 'none'} requests/s`);
  return {
    connections: load.connections,
    saturated: compareLoads(directSync, serviceSync, syncBudget),
    paced: { overall_rate: rate, ...compareLoads(directPaced, servicePaced, syncBudget) },
    fixed_rates: ladder,
  };
}

/** (b) Streaming time to first delta, one request at a time, direct and service interleaved. */
async function ttftPhase({ base, upstream, serviceHeaders, directHeaders, directBody }: PhaseContext) {
  log('(b) streaming time to first delta');
  const streamBody = JSON.stringify({ model: MODEL, input: 'Hello', background: false, stream: true });
  const direct: number[] = [];
  const ours: number[] = [];
  for (let index = 0; index < 300; index++) {
    direct.push(await firstDelta(`${upstream}/v1/responses`, directHeaders, directBody));
    ours.push(await firstDelta(`${base}/v2/responses`, serviceHeaders, streamBody));
  }
  const ttft = { direct_ms: distribution(direct.slice(20)), service_ms: distribution(ours.slice(20)) };
  const added = {
    p50: round(ttft.service_ms.p50 - ttft.direct_ms.p50),
    p99: round(ttft.service_ms.p99 - ttft.direct_ms.p99),
  };
  log(`  added p50 ${added.p50} ms, p99 ${added.p99} ms`);
  return { samples: ours.length - 20, ...ttft, added_ms: added, meets_target: added.p50 <= TARGET.ttftAddedP50Ms };
}

/**
 * (c) Background throughput: create N as fast as 50 connections allow; completed = debits written. CPU per
 * Response covers its creation and its run to completion.
 */
async function backgroundPhase(context: PhaseContext) {
  const { options, base, key, servicePid, serviceHeaders } = context;
  await sampleOne(context);
  log(`(c) background throughput, ${options.backgroundCount} Responses`);
  const billedBefore = await billedOperations(base, key);
  const databaseBefore = await databaseActivity(options);
  const started = performance.now();
  // Completions are counted while the Responses are still being created (every 50 ms, then every 20 ms once all
  // are created), so the end of the run is timed to within one poll, not to when the load generator returns. The
  // polls (usage reads) count in the service's CPU: about a hundred per run, under 1 % of it.
  let load: Awaited<ReturnType<typeof runLoad>> | undefined;
  let loadFailed = false;
  let completed = 0;
  const watchCompletions = async (): Promise<number> => {
    for (;;) {
      completed = (await billedOperations(base, key)) - billedBefore;
      const now = performance.now();
      if (completed >= (load?.ok ?? options.backgroundCount) || loadFailed || now - started > 300_000) return now;
      await new Promise((resolve) => setTimeout(resolve, load ? 20 : 50));
    }
  };
  let finishedAt = started;
  const created = await measureCpu(servicePid, async () => {
    const creating = runLoad(
      {
        url: `${base}/v2/responses`,
        method: 'POST',
        headers: serviceHeaders,
        body: JSON.stringify({ model: MODEL, input: 'Hello' }),
      },
      { connections: Math.min(50, options.backgroundCount), durationSeconds: 600, amount: options.backgroundCount },
    ).then(
      (result) => (load = result),
      (error: unknown) => {
        loadFailed = true;
        throw error;
      },
    );
    const [result, doneAt] = await Promise.all([creating, watchCompletions()]);
    finishedAt = doneAt;
    return result;
  });
  const createdAt = created.lastResponseAt ?? finishedAt;
  const database = await databaseActivity(options);
  const background = {
    created: created.ok,
    completed,
    create_seconds: round((createdAt - started) / 1000),
    total_seconds: round((finishedAt - started) / 1000),
    created_per_second: round(created.ok / ((createdAt - started) / 1000)),
    completed_per_second: round(completed / ((finishedAt - started) / 1000)),
    cpu_ms_per_response: created.cpuMsPerRequest ?? null,
    database_per_response:
      database && databaseBefore && completed > 0 ? perResponseDelta(databaseBefore, database, completed) : null,
  };
  log(`  ${JSON.stringify(background)}`);
  return { ...background, meets_target: background.completed_per_second >= TARGET.backgroundPerSecond };
}

/** Postgres' own counters for the bench database (statements, WAL bytes, commits); undefined on PGlite. */
async function databaseActivity(options: ResponsesBenchOptions): Promise<Record<string, number> | undefined> {
  if (options.pglite) return undefined;
  return withPostgres(options.postgresUrl, async (client) => {
    const wal = await client.query<{ wal_records: string; wal_bytes: string }>(
      'select wal_records, wal_bytes from pg_stat_wal',
    );
    const db = await client.query<{
      xact_commit: string;
      tup_inserted: string;
      tup_updated: string;
      tup_deleted: string;
    }>(
      'select xact_commit, tup_inserted, tup_updated, tup_deleted from pg_stat_database where datname = current_database()',
    );
    const statements = await client
      .query<{ calls: string }>('select sum(calls)::text as calls from pg_stat_statements')
      .then((result) => Number(result.rows[0]?.calls ?? NaN))
      .catch(() => NaN);
    // Per table, in the bench's own schema (the only `bench_` schema while a bench runs).
    const tables = await client.query<{ relname: string; written: string }>(
      "select relname, (n_tup_ins + n_tup_upd + n_tup_del)::text as written from pg_stat_user_tables where schemaname like 'bench\\_%'",
    );
    return {
      ...Object.fromEntries(tables.rows.map((row) => [`rows_written.${row.relname}`, Number(row.written)])),
      wal_records: Number(wal.rows[0].wal_records),
      wal_bytes: Number(wal.rows[0].wal_bytes),
      commits: Number(db.rows[0].xact_commit),
      rows_inserted: Number(db.rows[0].tup_inserted),
      rows_updated: Number(db.rows[0].tup_updated),
      rows_deleted: Number(db.rows[0].tup_deleted),
      ...(Number.isFinite(statements) ? { statements } : {}),
    };
  });
}

function perResponseDelta(before: Record<string, number>, after: Record<string, number>, count: number) {
  return Object.fromEntries(
    Object.keys(after).map((name) => [name, round((after[name] - (before[name] ?? 0)) / count, 2)]),
  );
}

/** Milliseconds from sending the request to the first text delta on the SSE stream. */
export function firstDelta(url: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (response) => {
        let buffer = '';
        let done = false;
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          buffer += chunk;
          if (!done && buffer.includes('output_text.delta')) {
            done = true;
            resolve(performance.now() - started);
          }
        });
        response.on('end', () => (done ? undefined : reject(new Error(`no delta in: ${buffer.slice(0, 300)}`))));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

function openStream(url: string, headers: Record<string, string>, body: string, agent: http.Agent) {
  let delta = false;
  let ended = false;
  let failure: string | undefined;
  let id: string | undefined;
  const request = http.request(
    url,
    { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
    (response) => {
      if (response.statusCode !== 200) failure = `HTTP ${response.statusCode}`;
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        id ??= /"id":"(resp_[0-9a-f]+)"/.exec(chunk)?.[1];
        if (chunk.includes('output_text.delta')) delta = true;
      });
      response.on('end', () => (ended = true));
      response.on('error', () => undefined);
    },
  );
  request.on('error', (error) => (failure ??= (error as NodeJS.ErrnoException).code ?? error.message));
  request.end(body);
  return Promise.resolve({
    sawDelta: () => delta,
    ended: () => ended,
    failure: () => failure,
    id: () => id,
    close: () => request.destroy(),
  });
}

export function distribution(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    p50: round(percentile(sorted, 0.5)),
    p90: round(percentile(sorted, 0.9)),
    p99: round(percentile(sorted, 0.99)),
    max: round(sorted.at(-1) ?? NaN),
  };
}

const log = (message: string) => process.stdout.write(`[bench responses] ${message}\n`);
