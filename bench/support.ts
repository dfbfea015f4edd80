import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

/** Shared pieces of the benchmarks: child processes, load runs with exact percentiles, environment facts. */

export interface ChildHandle<T> {
  child: ChildProcess;
  ready: T;
  stop(): Promise<void>;
}

/**
 * Starts `node <script> ...args` as a child with an IPC channel and waits for its first message. With
 * `cpus`, the child runs under `taskset -c <cpus>` so it keeps to its own core(s); `nodeFlags` go to node
 * itself (e.g. `--cpu-prof`, which NODE_OPTIONS does not accept).
 */
export async function startChild<T>(
  script: string,
  options: { args?: string[]; env?: NodeJS.ProcessEnv; cpus?: string; timeoutMs?: number; nodeFlags?: string[] } = {},
): Promise<ChildHandle<T>> {
  const nodeArgs = [...(options.nodeFlags ?? []), path.resolve(__dirname, script), ...(options.args ?? [])];
  const [command, args] = options.cpus
    ? ['taskset', ['-c', options.cpus, process.execPath, ...nodeArgs]]
    : [process.execPath, nodeArgs];
  const child = spawn(command, args, {
    env: options.env ?? process.env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${script} did not start within ${options.timeoutMs ?? 60_000} ms`)),
      options.timeoutMs ?? 60_000,
    );
    child.once('message', (message) => {
      clearTimeout(timer);
      resolve(message as T);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with code ${code} before it was ready`));
    });
  });
  return {
    child,
    ready,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(force);
          resolve();
        });
        child.disconnect();
      }),
  };
}

export interface LoadTarget {
  url: string;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body?: string;
}

export interface LoadResult {
  /** CPU milliseconds per answered request, when the run was measured with measureCpu. */
  cpuMsPerRequest?: { service: number; database: number };
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** What failed, by HTTP status or error code (runPaced only). */
  failures?: Record<string, number>;
  durationSeconds: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** runLoad: when (performance.now()) the last response arrived. */
  lastResponseAt?: number;
}

/**
 * One autocannon run. Latencies are collected from every 2xx response as floats (autocannon's own
 * histogram keeps whole milliseconds, too coarse for a 3 ms budget). For an even pace use runPaced:
 * autocannon's `overallRate` sends each second's quota as one burst.
 */
export async function runLoad(
  target: LoadTarget,
  options: { connections: number; durationSeconds: number; overallRate?: number; amount?: number },
): Promise<LoadResult> {
  const latencies: number[] = [];
  const startedAt = performance.now();
  let lastResponseAt = startedAt;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        method: target.method,
        headers: target.headers,
        body: target.body,
        connections: options.connections,
        duration: options.durationSeconds,
        overallRate: options.overallRate,
        amount: options.amount,
        timeout: 30,
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      lastResponseAt = performance.now();
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
  latencies.sort((a, b) => a - b);
  // autocannon notices the end of a run only at its next one-second sample tick: a run of `amount` requests
  // would be timed to the whole second after its last response (5,000 Responses in 4.03 s read as 5.04 s).
  const elapsed = options.amount ? (lastResponseAt - startedAt) / 1000 : result.duration || options.durationSeconds;
  return {
    requests: result.requests.total,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSeconds: round(elapsed),
    requestsPerSecond: round(result['2xx'] / elapsed),
    latencyMs: summarise(latencies),
    lastResponseAt,
  };
}

/**
 * An open-loop run at an even rate: request n is due at start + n/rate and is sent then whether or not
 * earlier ones have returned (up to `connections` sockets; beyond that they wait in the agent), and its
 * latency counts from when it was due, so a stall is charged to every request it delays. This is the
 * per-request cost at a given load, which autocannon's `overallRate` cannot show: it releases each
 * second's quota as one burst.
 */
export async function runPaced(
  target: LoadTarget,
  options: { rate: number; durationSeconds: number; connections: number },
): Promise<LoadResult> {
  const url = new URL(target.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const body = target.body === undefined ? undefined : Buffer.from(target.body);
  const headers = { ...target.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
  const interval = 1000 / options.rate;
  const latencies: number[] = [];
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  const failures: Record<string, number> = {};
  const fail = (kind: string) => (failures[kind] = (failures[kind] ?? 0) + 1);
  let sent = 0;
  let inFlight = 0;
  const start = performance.now();
  const end = start + options.durationSeconds * 1000;
  await new Promise<void>((resolve) => {
    let sending = true;
    const settle = () => {
      inFlight -= 1;
      if (!sending && inFlight === 0) resolve();
    };
    const fire = (dueAt: number) => {
      sent += 1;
      inFlight += 1;
      const request = http.request(
        { host: url.hostname, port: url.port, path: url.pathname + url.search, method: target.method, headers, agent },
        (response) => {
          response.resume();
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              ok += 1;
              latencies.push(performance.now() - dueAt);
            } else {
              non2xx += 1;
              fail(`HTTP ${status}`);
            }
            settle();
          });
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        errors += 1;
        fail(error.code ?? error.message);
        settle();
      });
      request.end(body);
    };
    const tick = () => {
      const now = Math.min(performance.now(), end);
      while (start + sent * interval <= now) fire(start + sent * interval);
      if (now >= end) {
        sending = false;
        if (inFlight === 0) resolve();
        return;
      }
      setTimeout(tick, 1);
    };
    tick();
  });
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const elapsed = (performance.now() - start) / 1000;
  return {
    requests: sent,
    ok,
    non2xx,
    errors,
    timeouts: 0,
    failures,
    durationSeconds: round(elapsed),
    requestsPerSecond: round(ok / options.durationSeconds),
    latencyMs: summarise(latencies),
  };
}

function summarise(sorted: number[]): LoadResult['latencyMs'] {
  return {
    p50: round(percentile(sorted, 0.5)),
    p90: round(percentile(sorted, 0.9)),
    p99: round(percentile(sorted, 0.99)),
    max: round(sorted.at(-1) ?? NaN),
    mean: round(sorted.reduce((sum, value) => sum + value, 0) / (sorted.length || 1)),
  };
}

export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Resident memory of a process (MB), from /proc. */
export function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return round(kb / 1024, 1);
}

export function environmentFacts() {
  let commit = 'unknown';
  let dirty = false;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
  } catch {
    // Not a git checkout: the figures still stand, without a commit.
  }
  return {
    node: process.version,
    commit,
    working_tree_dirty: dirty,
    // The service measured: this checkout's build unless another build was named (before/after comparisons).
    service_build: process.env.BENCH_SERVICE_DIST ?? 'this checkout',
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    platform: `${os.platform()} ${os.release()}`,
    // The machine may be shared: a high load average means the figures include other processes' work.
    load_average_1_5_15: os.loadavg().map((value) => round(value, 2)),
    date: new Date().toISOString(),
  };
}

/**
 * CPU time the hypervisor took from this VM (the `steal` column of /proc/stat), in seconds across all CPUs,
 * since the meter was made. Benchmarks report it: a run with seconds of steal was sharing the host. Null where
 * /proc/stat is missing.
 */
export function stealMeter(): () => number | null {
  const read = () => {
    try {
      const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
      return Number(fields[8]) / CLOCK_TICKS_PER_SECOND;
    } catch {
      return null;
    }
  };
  const start = read();
  return () => {
    const end = read();
    return start === null || end === null ? null : round(end - start, 2);
  };
}

export function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Service against direct upstream: the added latency, ratios and whether a budget of added ms is met. */
export function compareLoads(direct: LoadResult, service: LoadResult, budget: { p50: number; p99: number }) {
  const added = {
    p50: round(service.latencyMs.p50 - direct.latencyMs.p50),
    p99: round(service.latencyMs.p99 - direct.latencyMs.p99),
  };
  return {
    direct: loadToWire(direct),
    service: loadToWire(service),
    added_ms: added,
    /** Service throughput as a fraction of the bare upstream's. */
    throughput_ratio: round(service.requestsPerSecond / direct.requestsPerSecond),
    /** Service latency over the bare upstream's. */
    latency_ratio: {
      p50: round(service.latencyMs.p50 / direct.latencyMs.p50),
      p99: round(service.latencyMs.p99 / direct.latencyMs.p99),
    },
    meets_target: { p50: added.p50 <= budget.p50, p99: added.p99 <= budget.p99 },
  };
}

const loadToWire = (result: LoadResult) => ({
  requests_per_second: result.requestsPerSecond,
  latency_ms: result.latencyMs,
  ...(result.cpuMsPerRequest ? { cpu_ms_per_request: result.cpuMsPerRequest } : {}),
  requests: result.requests,
  ok: result.ok,
  non_2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
});

export const summary = (result: LoadResult) =>
  `${result.requestsPerSecond} req/s, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms` +
  (result.cpuMsPerRequest
    ? `, cpu/request service ${result.cpuMsPerRequest.service} ms, database ${result.cpuMsPerRequest.database} ms`
    : '') +
  (result.non2xx || result.errors ? ` (non-2xx ${result.non2xx}, errors ${result.errors})` : '');

/**
 * The account's billed operations so far: its debit transactions (`GET /v2/organization/usage`, total.transactions).
 * Every billed operation writes exactly one, also when the account's carry paid all of it (0 kopecks), so this counts
 * what completed and was billed; dividing the balance by one operation's price cannot, since the carry bills the
 * exact cost in whole kopecks only as they add up.
 */
export async function billedOperations(base: string, key: string): Promise<number> {
  const reply = await fetch(`${base}/v2/organization/usage`, { headers: { 'x-auth-token': key } });
  if (reply.status !== 200) throw new Error(`usage: ${reply.status}`);
  return ((await reply.json()) as { total: { transactions: number } }).total.transactions;
}

export async function withPostgres<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * The service's environment in a benchmark: fresh secrets, quiet logs, only the OpenAI vendor configured and
 * pointed at the fake upstream (nothing inherited from the caller's environment), Postgres when a URL is given.
 */
function serviceEnvironment(options: {
  dataDir: string;
  upstream: string;
  postgresUrl?: string;
  extra?: NodeJS.ProcessEnv;
}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    DATA_DIR: options.dataDir,
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    KEY_SIGNING_SECRET: randomBytes(32).toString('hex'),
    OPENAI_API_KEY: 'bench-upstream-key',
    OPENAI_BASE_URL: `${options.upstream}/v1`,
    PROVIDER_MAX_RETRIES: '0',
    METRICS_TOKEN: BENCH_METRICS_TOKEN,
    ...(options.postgresUrl ? { DATABASE_URL: options.postgresUrl, DATABASE_POOL_SIZE: '20' } : {}),
    ...options.extra,
  };
}

/** Every bench service exposes /metrics to the bench with this token (scrapeMetrics). */
const BENCH_METRICS_TOKEN = 'bench-metrics-token-0123456789';

/** One scrape of a bench service's /metrics (Prometheus text); a failed scrape throws. */
export async function scrapeMetrics(base: string): Promise<string> {
  const reply = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } });
  const text = await reply.text();
  if (reply.status !== 200) throw new Error(`scrape answered ${reply.status}: ${text.slice(0, 200)}`);
  return text;
}

/** Node flags the service runs with in production (package.json `start` and `worker`): a larger young generation. */
const SERVICE_NODE_FLAGS = ['--max-semi-space-size=32'];

/** What every benchmark runs against: the fake vendor and the service, each in its own process. */
export interface BenchStack {
  /** Base URL of the fake vendor (the "direct" baseline). */
  upstream: string;
  /** Base URL of the service, and the API key of its funded bench account. */
  base: string;
  key: string;
  service: ChildHandle<{ port: number; key: string }>;
  /** Temporal worker processes (`temporal`): they run the service's workflows. */
  workers: ChildHandle<{ pid: number }>[];
  backend: 'postgres' | 'pglite';
  /** How the processes were placed on cores, for the report. */
  cpuLayout: string;
  /** Stops both processes and removes the schema / data directory. */
  stop(): Promise<void>;
}

/**
 * Starts the zero-latency fake vendor and the service (Postgres in a fresh schema, or PGlite with
 * `pglite`). With `pin` (2+ cores and taskset), this process and the fake keep to cpu 0 and the service
 * to cpu 1. Whatever was started is cleaned up if a later step fails.
 */
export async function startBenchStack(options: {
  pin: boolean;
  pglite: boolean;
  postgresUrl: string;
  extraEnv?: NodeJS.ProcessEnv;
  nodeFlags?: string[];
  /**
   * On this Temporal server with this many worker processes (bench/worker-process.ts); the service is the API only,
   * unless `apiWorker`: then it runs a worker too (`all`).
   */
  temporal?: { address: string; workers: number; apiWorker?: boolean };
}): Promise<BenchStack> {
  const pin = options.pin && os.cpus().length >= 2 && hasTaskset();
  if (pin) execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  const fake = await startChild<{ port: number }>('fake-upstream.js', { cpus: pin ? '0' : undefined });
  const upstream = `http://127.0.0.1:${fake.ready.port}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-'));
  const schema = options.pglite ? undefined : `bench_${randomBytes(5).toString('hex')}`;
  const cleanUp = async () => {
    await fake.stop();
    if (schema)
      await withPostgres(options.postgresUrl, (client) => client.query(`drop schema if exists ${schema} cascade`));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  let service: ChildHandle<{ port: number; key: string }>;
  const workers: ChildHandle<{ pid: number }>[] = [];
  const temporalEnv = options.temporal
    ? { TEMPORAL_ADDRESS: options.temporal.address, TEMPORAL_TASK_QUEUE: `bench-${schema}` }
    : {};
  try {
    if (schema) await withPostgres(options.postgresUrl, (client) => client.query(`create schema ${schema}`));
    // BENCH_SERVICE_DIST runs another build's service (its dist/bench) under this load generator, for
    // interleaved before/after comparisons of two commits in one session.
    const serviceDir = process.env.BENCH_SERVICE_DIST
      ? path.resolve(process.env.BENCH_SERVICE_DIST, 'bench')
      : __dirname;
    service = await startChild<{ port: number; key: string }>(path.join(serviceDir, 'service-process.js'), {
      args: [...(schema ? ['--schema', schema] : []), ...(options.temporal?.apiWorker ? ['--with-worker'] : [])],
      env: serviceEnvironment({
        dataDir,
        upstream,
        postgresUrl: schema ? options.postgresUrl : undefined,
        extra: { ...options.extraEnv, ...temporalEnv },
      }),
      cpus: pin ? '1' : undefined,
      nodeFlags: [...SERVICE_NODE_FLAGS, ...(options.nodeFlags ?? [])],
    });
    for (let index = 0; index < (options.temporal?.workers ?? 0); index++) {
      if (!schema) throw new Error('Temporal workers need Postgres (processes cannot share PGlite)');
      workers.push(
        await startChild<{ pid: number }>(path.join(serviceDir, 'worker-process.js'), {
          args: ['--schema', schema],
          env: serviceEnvironment({
            dataDir,
            upstream,
            postgresUrl: options.postgresUrl,
            extra: { ...options.extraEnv, ...temporalEnv },
          }),
          cpus: pin ? '1' : undefined,
          nodeFlags: SERVICE_NODE_FLAGS,
        }),
      );
    }
  } catch (error) {
    for (const worker of workers) await worker.stop();
    await cleanUp();
    throw error;
  }
  return {
    upstream,
    base: `http://127.0.0.1:${service.ready.port}`,
    key: service.ready.key,
    service,
    workers,
    backend: schema ? 'postgres' : 'pglite',
    cpuLayout: pin ? 'service on cpu 1; load generator and fake upstream on cpu 0; database unpinned' : 'unpinned',
    stop: async () => {
      await service.stop();
      for (const worker of workers) await worker.stop();
      await cleanUp();
    },
  };
}

/** Writes a benchmark's JSON report (creating the folder). */
export function writeReport(output: string, report: unknown): void {
  fs.mkdirSync(path.dirname(output), { recursive: true });
  fs.writeFileSync(output, `${JSON.stringify(report, null, 2)}\n`);
}

const CLOCK_TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system, ms) a process has used so far, from /proc; undefined where there is no /proc. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** CPU time so far of every running Postgres process (server and backends) on this machine, by pid. */
export function postgresCpuMs(): Map<number, number> {
  const times = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    const cpu = processCpuMs(Number(entry));
    if (cpu !== undefined) times.set(Number(entry), cpu);
  }
  return times;
}

/** Postgres CPU spent between two snapshots: processes that exited in between are not counted. */
export function postgresCpuSince(before: Map<number, number>): number {
  let total = 0;
  for (const [pid, cpu] of postgresCpuMs()) total += cpu - (before.get(pid) ?? 0);
  return total;
}

/**
 * Runs a load and adds the CPU time the service process and Postgres spent per answered request (Linux
 * /proc; a 10 ms clock tick, so only meaningful over thousands of requests). Per-request CPU is steadier
 * than latency on a shared VM whose speed varies, and it is what bounds throughput.
 */
export async function measureCpu(servicePid: number | undefined, run: () => Promise<LoadResult>): Promise<LoadResult> {
  const serviceBefore = servicePid === undefined ? undefined : processCpuMs(servicePid);
  const databaseBefore = postgresCpuMs();
  const result = await run();
  const serviceAfter = servicePid === undefined ? undefined : processCpuMs(servicePid);
  if (serviceBefore === undefined || serviceAfter === undefined || result.ok === 0) return result;
  return {
    ...result,
    cpuMsPerRequest: {
      service: round((serviceAfter - serviceBefore) / result.ok),
      database: round(postgresCpuSince(databaseBefore) / result.ok),
    },
  };
}

/**
 * Added latency over a ladder of fixed rates (each an evenly paced open loop, the direct upstream then the
 * service, up to `connections` at once). Unlike a rate derived from the saturated throughput, a fixed rate
 * compares runs and days on the same load. `meets_target_at` lists the rates at which both budgets held. It
 * need not be a prefix of the ladder: on a VM the lowest rates can cost more per request (an idle CPU wakes
 * up cold for each one) than moderate ones. The ladder stops early once the service cannot keep up (its added
 * p50 is ten times the budget).
 */
export async function runRateLadder(
  direct: LoadTarget,
  service: LoadTarget,
  options: {
    rates: number[];
    durationSeconds: number;
    connections: number;
    budget: { p50: number; p99: number };
    servicePid?: number;
    log: (line: string) => void;
  },
) {
  const steps: ReturnType<typeof compareLoads>[] = [];
  const rates: number[] = [];
  for (const rate of options.rates) {
    const load = { rate, durationSeconds: options.durationSeconds, connections: options.connections };
    const directRun = await runPaced(direct, load);
    const serviceRun = await measureCpu(options.servicePid, () => runPaced(service, load));
    const step = compareLoads(directRun, serviceRun, options.budget);
    options.log(
      `  ${rate}/s: added p50 ${step.added_ms.p50} ms, p99 ${step.added_ms.p99} ms (service ${summary(serviceRun)})`,
    );
    steps.push(step);
    rates.push(rate);
    if (step.added_ms.p50 > 10 * options.budget.p50) break;
  }
  return {
    duration_seconds: options.durationSeconds,
    connections: options.connections,
    meets_target_at: rates.filter((_, index) => steps[index].meets_target.p50 && steps[index].meets_target.p99),
    steps: steps.map((step, index) => ({ rate: rates[index], ...step })),
  };
}
