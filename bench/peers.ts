import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { ProbeSnapshot } from './peers-probe';
import { distribution } from './responses';
import {
  environmentFacts,
  measureCpu,
  round,
  runLoad,
  runPaced,
  startBenchStack,
  stealMeter,
  withPostgres,
  writeReport,
  type BenchStack,
  type LoadResult,
  type LoadTarget,
} from './support';

/**
 * `npm run bench -- peers`: Switchyard beside Portkey (@portkey-ai/gateway, the TypeScript gateway users compare us
 * with) and the direct call, in interleaved rounds against one zero-latency fake vendor (bench/fake-upstream.ts).
 * Switchyard runs as users run it (bench/service-process.ts: Postgres, holds, debits, auth; logs at info) and is
 * called on `/openai/v1/chat/completions` with a catalog model whose vendor is the fake; Portkey is its built
 * server (`build/start-server.js`) pointed at the fake with its custom-host header. Each round measures, for each
 * of the three in turn: open-loop latency at fixed 100 and 300 req/s, requests one at a time (interleaved request
 * by request), saturated req/s with 100 connections, CPU per request (the gateway's process and Postgres, from
 * /proc), and the time to the first streamed token (interleaved). "Added" is a gateway's figure minus the direct
 * call's in the same round. After the rounds, an analysis phase runs a second Switchyard with bench/peers-probe.ts
 * preloaded (statements, commits, pool waits, group-commit waits, event-loop delay per request).
 */
export interface PeersBenchOptions {
  postgresUrl: string;
  rounds: number;
  /** Seconds per rate and saturated phase. */
  durationSeconds: number;
  /** Requests one at a time, per target and round. */
  sequential: number;
  ttftSamples: number;
  connections: number;
  /** The analysis phase (a probed Switchyard). */
  analysis: boolean;
  output: string;
}

const MODEL = 'gpt-4.1-mini';
const RATES = [100, 300] as const;
const GATEWAYS = ['switchyard', 'portkey'] as const;
type Gateway = (typeof GATEWAYS)[number];
type TargetName = 'direct' | Gateway;
const TARGETS: TargetName[] = ['direct', 'switchyard', 'portkey'];
const body = (stream: boolean) =>
  JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'Hello, how are you?' }],
    ...(stream ? { stream } : {}),
  });

interface Round {
  rate_100: Record<TargetName, LoadWire>;
  rate_300: Record<TargetName, LoadWire>;
  sequential: Record<TargetName, ReturnType<typeof distribution>>;
  saturated: Record<TargetName, LoadWire>;
  ttft: Record<TargetName, ReturnType<typeof distribution>>;
  added: {
    rate_100: Record<Gateway, { p50: number; p99: number }>;
    rate_300: Record<Gateway, { p50: number; p99: number }>;
    sequential: Record<Gateway, { p50: number; p99: number }>;
    ttft: Record<Gateway, { p50: number; p99: number }>;
  };
  load_generator_event_loop_delay_ms: { p50: number; p99: number; max: number };
}

type LoadWire = ReturnType<typeof loadWire>;
const loadWire = (result: LoadResult) => ({
  requests_per_second: result.requestsPerSecond,
  latency_ms: result.latencyMs,
  cpu_ms_per_request: result.cpuMsPerRequest,
  ok: result.ok,
  failed: result.non2xx + result.errors + result.timeouts,
});

export async function runPeersBench(options: PeersBenchOptions) {
  const steal = stealMeter();
  const stack = await startBenchStack({
    pin: false,
    pglite: false,
    postgresUrl: options.postgresUrl,
    extraEnv: { LOG_LEVEL: 'info' },
  });
  let portkey: PortkeyHandle | undefined;
  const rounds: Round[] = [];
  try {
    portkey = await startPortkey(stack.upstream);
    const targets = targetsOf(stack, portkey.port);
    const pids: Record<TargetName, number | undefined> = {
      direct: undefined,
      switchyard: stack.service.child.pid,
      portkey: portkey.child.pid,
    };
    for (const name of TARGETS) {
      const reply = await fetch(targets[name].url, {
        method: 'POST',
        headers: targets[name].headers,
        body: targets[name].body,
      });
      if (reply.status !== 200)
        throw new Error(`${name} refused the bench request: ${reply.status} ${await reply.text()}`);
    }
    log('warming up');
    for (const name of TARGETS) await runLoad(targets[name], { connections: options.connections, durationSeconds: 2 });
    await sequential(targets, 50);

    for (let index = 1; index <= options.rounds; index++) {
      log(`round ${index}/${options.rounds}`);
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const rate = {} as Record<(typeof RATES)[number], Record<TargetName, LoadResult>>;
      for (const perSecond of RATES) {
        rate[perSecond] = {} as Record<TargetName, LoadResult>;
        for (const name of TARGETS)
          rate[perSecond][name] = await measureCpu(pids[name], () =>
            runPaced(targets[name], {
              rate: perSecond,
              durationSeconds: options.durationSeconds,
              connections: options.connections,
            }),
          );
        log(
          `  ${perSecond}/s p50: ${TARGETS.map((name) => `${name} ${rate[perSecond][name].latencyMs.p50}`).join(', ')}`,
        );
      }
      const oneAtATime = await sequential(targets, options.sequential);
      log(`  one at a time p50: ${TARGETS.map((name) => `${name} ${oneAtATime[name].p50}`).join(', ')}`);
      const saturated = {} as Record<TargetName, LoadResult>;
      for (const name of TARGETS)
        saturated[name] = await measureCpu(pids[name], () =>
          runLoad(targets[name], { connections: options.connections, durationSeconds: options.durationSeconds }),
        );
      log(`  saturated req/s: ${TARGETS.map((name) => `${name} ${saturated[name].requestsPerSecond}`).join(', ')}`);
      const ttft = await firstTokens(targets, options.ttftSamples);
      log(`  first token p50: ${TARGETS.map((name) => `${name} ${ttft[name].p50}`).join(', ')}`);
      loop.disable();
      const addedTo = (of: (name: TargetName) => { p50: number; p99: number }) =>
        Object.fromEntries(
          GATEWAYS.map((name) => [
            name,
            { p50: round(of(name).p50 - of('direct').p50), p99: round(of(name).p99 - of('direct').p99) },
          ]),
        ) as Record<Gateway, { p50: number; p99: number }>;
      const mapped = (results: Record<TargetName, LoadResult>) =>
        Object.fromEntries(TARGETS.map((name) => [name, loadWire(results[name])])) as Record<TargetName, LoadWire>;
      const result: Round = {
        rate_100: mapped(rate[100]),
        rate_300: mapped(rate[300]),
        sequential: oneAtATime,
        saturated: mapped(saturated),
        ttft,
        added: {
          rate_100: addedTo((name) => rate[100][name].latencyMs),
          rate_300: addedTo((name) => rate[300][name].latencyMs),
          sequential: addedTo((name) => oneAtATime[name]),
          ttft: addedTo((name) => ttft[name]),
        },
        load_generator_event_loop_delay_ms: {
          p50: round(loop.percentile(50) / 1e6),
          p99: round(loop.percentile(99) / 1e6),
          max: round(loop.max / 1e6),
        },
      };
      log(`  added: ${JSON.stringify(result.added)}`);
      rounds.push(result);
    }
  } finally {
    portkey?.child.kill('SIGTERM');
    await stack.stop();
  }

  const analysis = options.analysis ? await analyse(options) : undefined;
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return round(sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2);
  };
  const perGateway = (of: (round: Round, name: Gateway) => number) =>
    Object.fromEntries(GATEWAYS.map((name) => [name, median(rounds.map((entry) => of(entry, name)))])) as Record<
      Gateway,
      number
    >;
  const cpu = (name: Gateway, part: 'service' | 'database') =>
    median(rounds.map((entry) => entry.saturated[name].cpu_ms_per_request?.[part] ?? NaN));
  const report = {
    benchmark: 'peers',
    endpoint: {
      switchyard: 'POST /openai/v1/chat/completions',
      portkey: 'POST /v1/chat/completions (x-portkey-provider: openai, x-portkey-custom-host: the fake)',
      direct: 'POST /v1/chat/completions on the fake',
    },
    model: MODEL,
    portkey_version: portkeyVersion(),
    rounds: options.rounds,
    duration_seconds: options.durationSeconds,
    connections: options.connections,
    sequential_requests: options.sequential,
    ttft_samples: options.ttftSamples,
    medians_over_rounds: 'every figure below',
    added_p50_ms: {
      rate_100: perGateway((entry, name) => entry.added.rate_100[name].p50),
      rate_300: perGateway((entry, name) => entry.added.rate_300[name].p50),
      sequential: perGateway((entry, name) => entry.added.sequential[name].p50),
    },
    added_p99_ms: {
      rate_100: perGateway((entry, name) => entry.added.rate_100[name].p99),
      rate_300: perGateway((entry, name) => entry.added.rate_300[name].p99),
      sequential: perGateway((entry, name) => entry.added.sequential[name].p99),
    },
    saturated_rps: perGateway((entry, name) => entry.saturated[name].requests_per_second),
    direct_saturated_rps: median(rounds.map((entry) => entry.saturated.direct.requests_per_second)),
    cpu_ms_per_request_saturated: {
      switchyard: { service: cpu('switchyard', 'service'), postgres: cpu('switchyard', 'database') },
      portkey: { service: cpu('portkey', 'service'), postgres: cpu('portkey', 'database') },
    },
    cpu_ms_per_request_rate_300: {
      switchyard: median(rounds.map((entry) => entry.rate_300.switchyard.cpu_ms_per_request?.service ?? NaN)),
      switchyard_postgres: median(rounds.map((entry) => entry.rate_300.switchyard.cpu_ms_per_request?.database ?? NaN)),
      portkey: median(rounds.map((entry) => entry.rate_300.portkey.cpu_ms_per_request?.service ?? NaN)),
    },
    ttft_added_p50_ms: perGateway((entry, name) => entry.added.ttft[name].p50),
    ttft_added_p99_ms: perGateway((entry, name) => entry.added.ttft[name].p99),
    round_results: rounds,
    analysis,
    cpu_steal_seconds: steal(),
    environment: environmentFacts(),
  };
  writeReport(options.output, report);
  log(`wrote ${options.output}`);
  log(
    `medians: added p50 ${JSON.stringify(report.added_p50_ms)}; saturated ${JSON.stringify(report.saturated_rps)}; ` +
      `ttft added p50 ${JSON.stringify(report.ttft_added_p50_ms)}`,
  );
  return report;
}

function targetsOf(stack: BenchStack, portkeyPort: number): Record<TargetName, LoadTarget> {
  const vendorHeaders = { 'content-type': 'application/json', authorization: 'Bearer bench-upstream-key' };
  return {
    direct: { url: `${stack.upstream}/v1/chat/completions`, method: 'POST', headers: vendorHeaders, body: body(false) },
    switchyard: {
      url: `${stack.base}/openai/v1/chat/completions`,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.key}` },
      body: body(false),
    },
    portkey: {
      url: `http://127.0.0.1:${portkeyPort}/v1/chat/completions`,
      method: 'POST',
      headers: {
        ...vendorHeaders,
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${stack.upstream}/v1`,
      },
      body: body(false),
    },
  };
}

interface PortkeyHandle {
  child: ChildProcess;
  port: number;
}

/**
 * Portkey's own server (`build/start-server.js --port=N --headless`, NODE_ENV=production: no UI). It has no log
 * level to set and logs nothing per request to stdout (it keeps each request for its UI's log stream, which
 * nobody reads here); its stdout, a start-up banner, is dropped.
 */
async function startPortkey(upstream: string): Promise<PortkeyHandle> {
  const port = await freePort();
  const entry = require.resolve('@portkey-ai/gateway/build/start-server.js');
  const child = spawn(process.execPath, [entry, `--port=${port}`, '--headless'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Portkey exited with code ${child.exitCode}`);
    try {
      const reply = await fetch(`http://127.0.0.1:${port}/`);
      if (reply.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`Portkey did not answer on port ${port} within 30 s (upstream ${upstream})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, port };
}

function portkeyVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('@portkey-ai/gateway/package.json') as { version: string }).version;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** One request and its latency (ms), or, with `firstToken`, the time to the first chunk that carries text. */
function timed(target: LoadTarget, agent: http.Agent, firstToken = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const payload = firstToken ? body(true) : target.body!;
    const started = performance.now();
    const request = http.request(
      target.url,
      {
        method: 'POST',
        agent,
        headers: { ...target.headers, 'content-length': Buffer.byteLength(payload) },
      },
      (response) => {
        if (response.statusCode !== 200) reject(new Error(`${target.url}: HTTP ${response.statusCode}`));
        let text = '';
        let at: number | undefined;
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (firstToken && at === undefined) {
            text += chunk;
            if (/"content":"[^"]/.test(text)) at = performance.now() - started;
          }
        });
        response.on('end', () => {
          if (!firstToken) return resolve(performance.now() - started);
          if (at === undefined) reject(new Error(`no token from ${target.url}: ${text.slice(0, 200)}`));
          else resolve(at);
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** `count` requests one at a time per target, interleaved request by request (drift hits all three alike). */
async function alternating(targets: Record<TargetName, LoadTarget>, count: number, firstToken: boolean) {
  const agents = Object.fromEntries(TARGETS.map((name) => [name, new http.Agent({ keepAlive: true, maxSockets: 1 })]));
  const samples = Object.fromEntries(TARGETS.map((name) => [name, [] as number[]])) as Record<TargetName, number[]>;
  try {
    for (let index = 0; index < count; index++)
      for (const name of TARGETS) samples[name].push(await timed(targets[name], agents[name]!, firstToken));
  } finally {
    for (const agent of Object.values(agents)) agent.destroy();
  }
  return Object.fromEntries(TARGETS.map((name) => [name, distribution(samples[name])])) as Record<
    TargetName,
    ReturnType<typeof distribution>
  >;
}

const sequential = (targets: Record<TargetName, LoadTarget>, count: number) => alternating(targets, count, false);
const firstTokens = (targets: Record<TargetName, LoadTarget>, count: number) => alternating(targets, count, true);

/**
 * Where Switchyard's time goes: a second service with bench/peers-probe.ts preloaded, at 100 and 300 req/s and
 * one request at a time. Per chat completion: statements (round trips) by kind, commits (counted by the probe, and
 * Postgres' own xact_commit for the database, which other sessions' work on the same server also moves), rows
 * written in the bench's schema, pool waits, group-commit waits and writes, vendor call and event-loop delay.
 */
async function analyse(options: PeersBenchOptions) {
  log('analysis: a probed Switchyard');
  const stack = await startBenchStack({
    pin: false,
    pglite: false,
    postgresUrl: options.postgresUrl,
    extraEnv: { LOG_LEVEL: 'info' },
    nodeFlags: ['--require', path.join(__dirname, 'peers-probe.js')],
  });
  try {
    const target = targetsOf(stack, 0).switchyard;
    const child = stack.service.child;
    const probe = async (command: 'reset' | 'read'): Promise<ProbeSnapshot | undefined> => {
      if (command === 'reset') {
        child.send({ probe: 'reset' });
        return undefined;
      }
      const answer = new Promise<ProbeSnapshot>((resolve) => {
        const listener = (message: { probe?: ProbeSnapshot }) => {
          if (!message?.probe) return;
          child.off('message', listener);
          resolve(message.probe);
        };
        child.on('message', listener);
      });
      child.send({ probe: 'read' });
      return answer;
    };
    const database = () =>
      withPostgres(options.postgresUrl, async (client) => {
        const commits = await client.query<{ commits: string }>(
          'select xact_commit::text as commits from pg_stat_database where datname = current_database()',
        );
        const schema = await client.query<{ rows: string }>(
          `select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::text as rows from pg_stat_user_tables
           where schemaname like 'bench_%'`,
        );
        return { commits: Number(commits.rows[0]!.commits), rows: Number(schema.rows[0]!.rows) };
      });
    await runLoad(target, { connections: options.connections, durationSeconds: 2 });
    const phases: Record<string, unknown> = {};
    const run = async (name: string, load: () => Promise<{ ok: number; latency?: unknown }>) => {
      await probe('reset');
      const before = await database();
      const result = await load();
      // pg_stat_database is updated by each backend when it goes idle (at most every 500 ms by default).
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const after = await database();
      const snapshot = (await probe('read'))!;
      const per = (value: number) => round(value / result.ok, 3);
      const statementTotal = Object.values(snapshot.statements).reduce((sum, entry) => sum + entry.count, 0);
      phases[name] = {
        requests: result.ok,
        latency_ms: result.latency,
        per_request: {
          statements: per(statementTotal),
          commits_probe: per(snapshot.commits),
          xact_commit_database: per(after.commits - before.commits),
          rows_written_in_bench_schemas: per(after.rows - before.rows),
          statement_ms: per(Object.values(snapshot.statements).reduce((sum, entry) => sum + entry.total_ms, 0)),
          pool_connect_ms: per(snapshot.pool_connect.total_ms),
          http_ms_in_service: per(snapshot.http_requests.total_ms),
          vendor_call_ms: per(snapshot.vendor_calls.total_ms),
        },
        statements_by_kind: Object.fromEntries(
          Object.entries(snapshot.statements)
            .sort(([, a], [, b]) => b.count - a.count)
            .map(([kind, entry]) => [
              kind,
              {
                per_request: per(entry.count),
                mean_ms: round(entry.total_ms / (entry.count || 1)),
                max_ms: entry.max_ms,
              },
            ]),
        ),
        group_commits: Object.fromEntries(
          Object.entries(snapshot.group_commits).map(([writer, entry]) => [
            writer,
            {
              per_request: per(entry.items),
              items_per_batch: round(entry.items / (entry.batches || 1)),
              wait_for_batch_mean_ms: round(entry.wait.total_ms / (entry.wait.count || 1)),
              wait_for_batch_max_ms: entry.wait.max_ms,
              batch_write_mean_ms: round(entry.write.total_ms / (entry.write.count || 1)),
            },
          ]),
        ),
        pool: {
          connects_per_request: per(snapshot.pool_connect.count),
          connects_that_waited: snapshot.pool_connects_that_waited,
          connect_mean_ms: round(snapshot.pool_connect.total_ms / (snapshot.pool_connect.count || 1)),
          connect_max_ms: snapshot.pool_connect.max_ms,
        },
        service_event_loop_delay_ms: snapshot.event_loop_delay_ms,
      };
      log(`  ${name}: ${JSON.stringify(phases[name])}`);
    };
    for (const perSecond of RATES)
      await run(`rate_${perSecond}`, async () => {
        const result = await runPaced(target, {
          rate: perSecond,
          durationSeconds: options.durationSeconds,
          connections: options.connections,
        });
        return { ok: result.ok, latency: result.latencyMs };
      });
    await run('sequential', async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const samples: number[] = [];
      for (let index = 0; index < options.sequential; index++) samples.push(await timed(target, agent));
      agent.destroy();
      return { ok: samples.length, latency: distribution(samples) };
    });
    return phases;
  } finally {
    await stack.stop();
  }
}

const log = (message: string) => process.stdout.write(`[bench peers] ${message}\n`);
