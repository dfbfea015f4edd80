import {
  environmentFacts,
  measureCpu,
  round,
  rssMb,
  runLoad,
  runPaced,
  startBenchStack,
  stealMeter,
  summary,
  withPostgres,
  writeReport,
  type LoadTarget,
} from './support';

/**
 * Soak: synchronous Responses (auth, billing, the engine, the vendor call, persistence: every part of the
 * request path) at a fraction of the saturated throughput for a long time, measured in windows. What it
 * shows is whether the service stays put: resident memory and latency of the last third of the run against
 * the first third (after a warm-up window that is not counted), and the trend of RSS over the run.
 *
 * "Flat" means: RSS of the last third within 10 % (and 30 MB) of the first third's, and p50 latency of the last
 * third within 25 % (and 2 ms) of the first third's; errors are zero. The VM's speed drifts within the hour, so
 * latency is compared with the direct fake measured in the same windows as well.
 */
export interface SoakBenchOptions {
  pglite: boolean;
  postgresUrl: string;
  minutes: number;
  windowSeconds: number;
  /** Fraction of the saturated throughput (measured first, 10 s) to hold. */
  fraction: number;
  /** A fixed rate (requests/s) to hold instead: a 10 s saturation probe on a noisy VM can be far off. */
  rate?: number;
  connections: number;
  output: string;
}

const MODEL = 'gpt-4.1-mini';
const RSS_GROWTH_LIMIT = { ratio: 0.1, mb: 30 };
const LATENCY_GROWTH_LIMIT = { ratio: 0.25, ms: 2 };

export async function runSoakBench(options: SoakBenchOptions) {
  const steal = stealMeter();
  // Every Response leaves dead row versions (holds, jobs, Responses): without autovacuum they pile up and the
  // statements that scan them get slower by the minute, which a production Postgres does not do.
  const autovacuum = options.pglite
    ? undefined
    : await withPostgres(
        options.postgresUrl,
        async (client) => (await client.query<{ autovacuum: string }>('show autovacuum')).rows[0].autovacuum,
      );
  if (autovacuum === 'off')
    log('WARNING: this Postgres runs with autovacuum off; expect the database to slow down as dead rows pile up');
  const stack = await startBenchStack({ pin: true, pglite: options.pglite, postgresUrl: options.postgresUrl });
  const servicePid = stack.service.child.pid!;
  const service: LoadTarget = {
    url: `${stack.base}/v2/responses`,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-auth-token': stack.key },
    body: JSON.stringify({ model: MODEL, input: 'Hello', background: false }),
  };
  const direct: LoadTarget = {
    url: `${stack.upstream}/v1/responses`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench-upstream-key' },
    body: JSON.stringify({
      model: MODEL,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
      stream: true,
    }),
  };
  try {
    await runLoad(service, { connections: 20, durationSeconds: 3 });
    const saturated = await runLoad(service, { connections: options.connections, durationSeconds: 10 });
    const rate = options.rate ?? Math.max(10, Math.floor(saturated.requestsPerSecond * options.fraction));
    log(
      `saturated ${summary(saturated)}; holding ${rate}/s for ${options.minutes} min in ${options.windowSeconds} s windows`,
    );
    const windows: Array<ReturnType<typeof windowReport>> = [];
    const count = Math.max(3, Math.round((options.minutes * 60) / options.windowSeconds));
    const started = performance.now();
    for (let index = 0; index < count; index++) {
      // A short direct probe first: the fake's own latency in this window, so a slower VM is not read as drift.
      const directProbe = await runPaced(direct, {
        rate,
        durationSeconds: Math.min(5, options.windowSeconds),
        connections: options.connections,
      });
      const run = await measureCpu(servicePid, () =>
        runPaced(service, { rate, durationSeconds: options.windowSeconds, connections: options.connections }),
      );
      const report = windowReport(index, (performance.now() - started) / 60_000, run, directProbe, rssMb(servicePid));
      windows.push(report);
      log(`  ${JSON.stringify(report)}`);
    }
    // Window 0 warms up (caches, JIT, pool); thirds of the rest are compared.
    const counted = windows.slice(1);
    const third = Math.max(1, Math.floor(counted.length / 3));
    const first = counted.slice(0, third);
    const last = counted.slice(-third);
    const mean = (values: number[]) => round(values.reduce((sum, value) => sum + value, 0) / values.length);
    const rssFirst = mean(first.map((window) => window.rss_mb));
    const rssLast = mean(last.map((window) => window.rss_mb));
    const addedFirst = mean(first.map((window) => window.added_p50_ms));
    const addedLast = mean(last.map((window) => window.added_p50_ms));
    const errors = windows.reduce((sum, window) => sum + window.errors, 0);
    const rssFlat = rssLast - rssFirst <= Math.max(RSS_GROWTH_LIMIT.mb, rssFirst * RSS_GROWTH_LIMIT.ratio);
    const latencyFlat =
      addedLast - addedFirst <= Math.max(LATENCY_GROWTH_LIMIT.ms, addedFirst * LATENCY_GROWTH_LIMIT.ratio);
    const verdict = {
      rss_mb_first_third: rssFirst,
      rss_mb_last_third: rssLast,
      rss_slope_mb_per_10_min: round(slope(counted.map((window) => [window.minute, window.rss_mb])) * 10, 2),
      added_p50_ms_first_third: addedFirst,
      added_p50_ms_last_third: addedLast,
      p99_ms_first_third: mean(first.map((window) => window.service_ms.p99)),
      p99_ms_last_third: mean(last.map((window) => window.service_ms.p99)),
      errors,
      rss_flat: rssFlat,
      latency_flat: latencyFlat,
      meets_target: rssFlat && latencyFlat && errors === 0,
    };
    log(`verdict ${JSON.stringify(verdict)}`);
    const report = {
      benchmark: 'soak',
      backend: stack.backend,
      postgres_autovacuum: autovacuum ?? null,
      workload: `synchronous Responses (${MODEL}, zero-latency OpenAI fake) at ${options.rate ? `a fixed ${options.rate}/s` : `${options.fraction} of the saturated throughput`}`,
      cpu_layout: stack.cpuLayout,
      saturated: { requests_per_second: round(saturated.requestsPerSecond), connections: options.connections },
      rate,
      minutes: options.minutes,
      window_seconds: options.windowSeconds,
      criteria: { rss_growth: RSS_GROWTH_LIMIT, added_p50_growth: LATENCY_GROWTH_LIMIT, errors: 0 },
      verdict,
      windows,
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

function windowReport(
  index: number,
  minute: number,
  run: Awaited<ReturnType<typeof runPaced>>,
  directProbe: Awaited<ReturnType<typeof runPaced>>,
  rss: number,
) {
  return {
    window: index,
    minute: round(minute, 2),
    requests: run.requests,
    errors: run.errors + run.non2xx + run.timeouts,
    failures: run.failures ?? {},
    service_ms: { p50: round(run.latencyMs.p50), p99: round(run.latencyMs.p99), max: round(run.latencyMs.max) },
    direct_ms: { p50: round(directProbe.latencyMs.p50), p99: round(directProbe.latencyMs.p99) },
    added_p50_ms: round(run.latencyMs.p50 - directProbe.latencyMs.p50),
    rss_mb: rss,
    cpu_ms_per_request: run.cpuMsPerRequest ?? null,
  };
}

/** Least-squares slope of y over x. */
function slope(points: number[][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  const covariance = points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0);
  const variance = points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
  return variance === 0 ? 0 : covariance / variance;
}

const log = (message: string) => process.stdout.write(`[bench soak] ${message}\n`);
