import { distribution, firstDelta } from './responses';
import { startTemporalDevServer } from './temporal-dev-server';
import {
  billedOperations,
  environmentFacts,
  percentile,
  postgresCpuMs,
  postgresCpuSince,
  processCpuMs,
  round,
  runLoad,
  startBenchStack,
  stealMeter,
  writeReport,
  type BenchStack,
} from './support';

/**
 * `npm run bench -- temporal`: Responses on a real Temporal server against the embedded engine, in interleaved
 * rounds in one run (this VM's speed drifts within a day), on Postgres, with the zero-latency OpenAI fake:
 *  - background Responses completed per second (created by 50 connections, counted by their debits), with one
 *    and with two worker processes;
 *  - time to first delta added over the direct upstream call (streamed synchronous Responses, one at a time);
 *  - CPU per background Response, split into the API process, the workers, Postgres and the Temporal server.
 * The Temporal server is the CLI's dev server (scripts/temporal.js builds it once), started here on free ports
 * with its SQLite in memory, unless BENCH_TEMPORAL_ADDRESS names one (then its CPU is not measured).
 */
export interface TemporalBenchOptions {
  postgresUrl: string;
  backgroundCount: number;
  ttftSamples: number;
  rounds: number;
  output: string;
}

const MODEL = 'gpt-4.1-mini';
/** Issue 30's targets. */
const TARGET = { backgroundPerSecond: 150, ttftAddedP50Ms: 20 };
/**
 * `workers`: worker processes beside an API-only process; `apiWorker`: the API process runs a worker too (`all` with
 * TEMPORAL_ADDRESS), which its workflow starts reach eagerly (src/engine/temporal-engine.ts, startEagerlyOn).
 */
const SETUPS = [
  { name: 'embedded', workers: 0, apiWorker: false },
  { name: 'temporal_1_worker', workers: 1, apiWorker: false },
  { name: 'temporal_2_workers', workers: 2, apiWorker: false },
  { name: 'temporal_api_worker', workers: 0, apiWorker: true },
] as const;
type SetupName = (typeof SETUPS)[number]['name'];

interface RoundResult {
  ttft_added_p50_ms: number;
  ttft_added_p99_ms: number;
  background_completed_per_second: number;
  background_completed: number;
  cpu_ms_per_response: {
    api: number;
    workers: number;
    postgres: number;
    temporal_server: number | null;
    total: number;
  };
}

export async function runTemporalBench(options: TemporalBenchOptions) {
  const steal = stealMeter();
  const server = process.env.BENCH_TEMPORAL_ADDRESS ? undefined : await startTemporalDevServer();
  const address = process.env.BENCH_TEMPORAL_ADDRESS ?? server!.address;
  const results: Record<SetupName, RoundResult[]> = {
    embedded: [],
    temporal_1_worker: [],
    temporal_2_workers: [],
    temporal_api_worker: [],
  };
  try {
    for (let round = 1; round <= options.rounds; round++) {
      for (const setup of SETUPS) {
        log(`round ${round}/${options.rounds}: ${setup.name}`);
        const stack = await startBenchStack({
          pin: false,
          pglite: false,
          postgresUrl: options.postgresUrl,
          temporal:
            setup.workers > 0 || setup.apiWorker
              ? { address, workers: setup.workers, apiWorker: setup.apiWorker }
              : undefined,
        });
        try {
          const result = await measure(stack, options, server?.child.pid);
          log(`  ${JSON.stringify(result)}`);
          results[setup.name].push(result);
        } finally {
          await stack.stop();
        }
      }
    }
  } finally {
    await server?.stop();
  }
  const medians = Object.fromEntries(
    Object.entries(results).map(([name, rounds]) => [name, medianOf(rounds)]),
  ) as Record<SetupName, RoundResult>;
  const report = {
    benchmark: 'temporal',
    backend: 'postgres',
    temporal_server: server
      ? 'temporal CLI 1.5.1 dev server (Server 1.29.1), SQLite in memory, own process'
      : `existing server at ${address}`,
    upstream: 'shared OpenAI fake (test/fakes) in zero-latency mode (Responses API, streamed), own process',
    model: MODEL,
    rounds: options.rounds,
    background_count: options.backgroundCount,
    ttft_samples: options.ttftSamples,
    target: TARGET,
    medians,
    meets_target: {
      background_per_second: medians.temporal_1_worker.background_completed_per_second >= TARGET.backgroundPerSecond,
      ttft_added_p50_ms: medians.temporal_1_worker.ttft_added_p50_ms <= TARGET.ttftAddedP50Ms,
    },
    rounds_detail: results,
    cpu_steal_seconds: steal(),
    environment: environmentFacts(),
  };
  writeReport(options.output, report);
  log(`wrote ${options.output}`);
  return report;
}

async function measure(
  stack: BenchStack,
  options: TemporalBenchOptions,
  temporalPid: number | undefined,
): Promise<RoundResult> {
  const headers = { 'content-type': 'application/json', 'x-auth-token': stack.key };
  const directHeaders = { 'content-type': 'application/json', authorization: 'Bearer bench-upstream-key' };
  const directBody = JSON.stringify({
    model: MODEL,
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
    stream: true,
  });
  const streamBody = JSON.stringify({ model: MODEL, input: 'Hello', background: false, stream: true });

  // Time to first delta, one at a time, the direct call and ours alternating; the first 20 warm up.
  const direct: number[] = [];
  const ours: number[] = [];
  for (let index = 0; index < options.ttftSamples + 20; index++) {
    direct.push(await firstDelta(`${stack.upstream}/v1/responses`, directHeaders, directBody));
    ours.push(await firstDelta(`${stack.base}/v2/responses`, headers, streamBody));
  }
  const directMs = distribution(direct.slice(20));
  const oursMs = distribution(ours.slice(20));

  // Background: one sample, then N created at once and counted as their debits land (one debit per Response).
  const sample = await fetch(`${stack.base}/v2/responses`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: MODEL, input: 'Hello', background: false }),
  });
  const sampleBody = (await sample.json()) as { status: string };
  if (sampleBody.status !== 'completed') throw new Error(`sample Response: ${JSON.stringify(sampleBody)}`);
  const before = await billedOperations(stack.base, stack.key);
  const pids = { api: stack.service.child.pid!, workers: stack.workers.map((worker) => worker.child.pid!) };
  const cpuBefore = {
    api: processCpuMs(pids.api)!,
    workers: pids.workers.map((pid) => processCpuMs(pid)!),
    temporal: temporalPid ? processCpuMs(temporalPid) : undefined,
    postgres: postgresCpuMs(),
  };
  const started = performance.now();
  let created = 0;
  const creating = runLoad(
    {
      url: `${stack.base}/v2/responses`,
      method: 'POST',
      headers,
      body: JSON.stringify({ model: MODEL, input: 'Hello' }),
    },
    { connections: 50, durationSeconds: 600, amount: options.backgroundCount },
  ).then((result) => (created = result.ok));
  let completed = 0;
  let finishedAt = started;
  for (;;) {
    completed = (await billedOperations(stack.base, stack.key)) - before;
    finishedAt = performance.now();
    if ((created > 0 && completed >= created) || finishedAt - started > 300_000) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await creating;
  const per = (ms: number) => round(ms / Math.max(1, completed));
  const api = per(processCpuMs(pids.api)! - cpuBefore.api);
  const workers = per(pids.workers.reduce((sum, pid, index) => sum + processCpuMs(pid)! - cpuBefore.workers[index], 0));
  const postgres = per(postgresCpuSince(cpuBefore.postgres));
  const temporalServer =
    temporalPid && cpuBefore.temporal !== undefined ? per(processCpuMs(temporalPid)! - cpuBefore.temporal) : null;
  return {
    ttft_added_p50_ms: round(oursMs.p50 - directMs.p50),
    ttft_added_p99_ms: round(oursMs.p99 - directMs.p99),
    background_completed_per_second: round(completed / ((finishedAt - started) / 1000)),
    background_completed: completed,
    cpu_ms_per_response: {
      api,
      workers,
      postgres,
      temporal_server: temporalServer,
      total: round(api + workers + postgres + (temporalServer ?? 0)),
    },
  };
}

function medianOf(rounds: RoundResult[]): RoundResult {
  const median = (pick: (round: RoundResult) => number) =>
    round(
      percentile(
        [...rounds.map(pick)].sort((a, b) => a - b),
        0.5,
      ),
    );
  return {
    ttft_added_p50_ms: median((r) => r.ttft_added_p50_ms),
    ttft_added_p99_ms: median((r) => r.ttft_added_p99_ms),
    background_completed_per_second: median((r) => r.background_completed_per_second),
    background_completed: median((r) => r.background_completed),
    cpu_ms_per_response: {
      api: median((r) => r.cpu_ms_per_response.api),
      workers: median((r) => r.cpu_ms_per_response.workers),
      postgres: median((r) => r.cpu_ms_per_response.postgres),
      temporal_server:
        rounds[0]?.cpu_ms_per_response.temporal_server === null
          ? null
          : median((r) => r.cpu_ms_per_response.temporal_server ?? 0),
      total: median((r) => r.cpu_ms_per_response.total),
    },
  };
}

const log = (message: string) => process.stdout.write(`[bench temporal] ${message}\n`);
