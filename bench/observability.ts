import fs from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { requestContext } from '../src/http/request-context';
import { createMetrics } from '../src/metrics/metrics';
import {
  percentile,
  round,
  runPaced,
  scrapeMetrics,
  startBenchStack,
  summary,
  type LoadResult,
  type LoadTarget,
} from './support';

/**
 * What observability costs per request, in this process: the request middleware (request id, one histogram
 * observation, one log line at info into a sink) against a middleware that does nothing, in CPU per request
 * (target ≤ 0.05 ms); and the time and size of a scrape of a registry holding a busy day's series.
 */
export async function runObservabilityBench(options: {
  requests: number;
  output: string;
  underLoad?: { postgresUrl: string; rate: number; durationSeconds: number; scrapeIntervalMs: number };
}) {
  const metrics = createMetrics();
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const logged = requestContext(pino({ level: 'info' }, sink), metrics);
  const quiet = requestContext(pino({ level: 'warn' }, sink), metrics);
  const routes = [
    '/v2/responses',
    '/v2/responses/:id',
    '/v2/chat/completions',
    '/openai/v1/chat/completions',
    '/v2/embeddings',
    '/v2/conversations/:conversationId/items',
  ];

  const context = (index: number) => {
    const headers: Record<string, string> = {};
    return {
      method: index % 3 === 0 ? 'GET' : 'POST',
      status: index % 50 === 0 ? 400 : 200,
      _matchedRoute: routes[index % routes.length],
      res: { headersSent: false, statusCode: 200 },
      state: { auth: { accountId: 'acct_0123456789abcdef01234567' } } as Record<string, unknown>,
      get: (name: string) => (name === 'x-request-id' && index % 2 === 0 ? `trace-${index}` : ''),
      set: (name: string, value: string) => void (headers[name] = value),
    };
  };
  const next = async () => undefined;
  const noop = async (_ctx: unknown, nextStep: () => Promise<unknown>) => nextStep();

  async function cpuPerRequest(
    middleware: (ctx: never, next: () => Promise<undefined>) => Promise<unknown>,
  ): Promise<number> {
    for (let index = 0; index < 20_000; index++) await middleware(context(index) as never, next); // warm-up
    const before = process.cpuUsage();
    for (let index = 0; index < options.requests; index++) await middleware(context(index) as never, next);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1000 / options.requests;
  }

  // Interleaved rounds: this VM's speed drifts; the added cost is each round's difference.
  const rounds = [];
  for (let round = 0; round < 5; round++) {
    const baseline = await cpuPerRequest(noop);
    const withLog = await cpuPerRequest(logged);
    const withoutLog = await cpuPerRequest(quiet);
    rounds.push({ baseline_ms: baseline, logged_ms: withLog, metrics_only_ms: withoutLog });
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const added = {
    metrics_and_log_line_ms: round4(median(rounds.map((r) => r.logged_ms - r.baseline_ms))),
    metrics_only_ms: round4(median(rounds.map((r) => r.metrics_only_ms - r.baseline_ms))),
  };

  // A scrape of the registry as it now is (every route × method × status series, process metrics).
  const scrapes = [];
  for (let index = 0; index < 20; index++) {
    const started = process.hrtime.bigint();
    const text = await metrics.registry.metrics();
    scrapes.push({ ms: Number(process.hrtime.bigint() - started) / 1e6, bytes: text.length });
  }
  const result = {
    benchmark: 'observability',
    requests_per_round: options.requests,
    target: { added_cpu_per_request_ms: 0.05 },
    added_cpu_per_request: added,
    rounds: rounds.map((r) => Object.fromEntries(Object.entries(r).map(([key, value]) => [key, round4(value)]))),
    scrape: { median_ms: round4(median(scrapes.map((s) => s.ms))), bytes: scrapes[0]!.bytes },
    scrape_under_load: options.underLoad ? await scrapeUnderLoad(options.underLoad) : undefined,
  };
  fs.writeFileSync(options.output, JSON.stringify(result, null, 2) + '\n');
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
}

const round4 = (value: number) => Math.round(value * 10_000) / 10_000;

/**
 * A scrape of the running service while it serves chat at a fixed rate (Postgres): the scrape's own latency
 * (it reads the engine gauges from the database) and what scraping costs the traffic, as paced rounds with and
 * without a scraper, interleaved. Prometheus scrapes every 15-60 s; the scraper here asks every
 * `scrapeIntervalMs` (far more often) so one run holds enough scrapes to measure and any effect shows.
 */
async function scrapeUnderLoad(options: {
  postgresUrl: string;
  rate: number;
  durationSeconds: number;
  scrapeIntervalMs: number;
}) {
  const stack = await startBenchStack({ pin: false, pglite: false, postgresUrl: options.postgresUrl });
  try {
    const target: LoadTarget = {
      url: `${stack.base}/v2/chat/completions`,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': stack.key },
      body: JSON.stringify({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'Hello, how are you?' }] }),
    };
    const load = { rate: options.rate, durationSeconds: options.durationSeconds, connections: 100 };
    await runPaced(target, { ...load, durationSeconds: 3 }); // warm-up: JIT, pools, upstream sockets
    const rounds: Array<{ without_scrapes: LoadResult; with_scrapes: LoadResult }> = [];
    const scrapeMs: number[] = [];
    let bytes = 0;
    for (let index = 0; index < 3; index++) {
      const withoutScrapes = await runPaced(target, load);
      let scraping = true;
      const scraper = (async () => {
        while (scraping) {
          const started = performance.now();
          const text = await scrapeMetrics(stack.base);
          scrapeMs.push(performance.now() - started);
          bytes = text.length;
          await new Promise((resolve) => setTimeout(resolve, options.scrapeIntervalMs));
        }
      })();
      const withScrapes = await runPaced(target, load);
      scraping = false;
      await scraper;
      process.stderr.write(
        `[observability] round ${index + 1}: without ${summary(withoutScrapes)} | with ${summary(withScrapes)}\n`,
      );
      rounds.push({ without_scrapes: withoutScrapes, with_scrapes: withScrapes });
    }
    scrapeMs.sort((a, b) => a - b);
    const medianOf = (pick: (r: (typeof rounds)[number]) => number) =>
      round([...rounds.map(pick)].sort((a, b) => a - b)[1]!);
    return {
      backend: stack.backend,
      traffic: `POST /v2/chat/completions at ${options.rate} requests/s, ${options.durationSeconds} s per round, 3 interleaved rounds`,
      scrape_interval_ms: options.scrapeIntervalMs,
      scrapes: scrapeMs.length,
      scrape_ms: {
        p50: round(percentile(scrapeMs, 0.5)),
        p99: round(percentile(scrapeMs, 0.99)),
        max: round(scrapeMs.at(-1) ?? NaN),
      },
      scrape_bytes: bytes,
      traffic_p50_ms: {
        without_scrapes: medianOf((r) => r.without_scrapes.latencyMs.p50),
        with_scrapes: medianOf((r) => r.with_scrapes.latencyMs.p50),
      },
      traffic_p99_ms: {
        without_scrapes: medianOf((r) => r.without_scrapes.latencyMs.p99),
        with_scrapes: medianOf((r) => r.with_scrapes.latencyMs.p99),
      },
      rounds,
    };
  } finally {
    await stack.stop();
  }
}
