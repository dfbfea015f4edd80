import path from 'node:path';
import { runAudioBench } from './audio';
import { runChatBench } from './chat';
import { runFailoverBench } from './failover';
import { runMcpBench } from './mcp';
import { runObservabilityBench } from './observability';
import { runPeersBench } from './peers';
import { runSoakBench } from './soak';
import { runTemporalBench } from './temporal';
import { RESPONSES_PHASES, runResponsesBench, type ResponsesPhase } from './responses';

/**
 * Benchmark entry: `npm run bench -- chat [--pglite] [--connections N] [--duration S] [--pin]
 * [--paced-fraction F] [--out FILE] [--profile DIR]` (and `responses`, see the usage line). Builds first
 * (npm script), then runs from dist/.
 * Postgres comes from BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test.
 */
const usage =
  'usage: node dist/bench/run.js peers [--rounds 5] [--duration 4] [--sequential 300] [--samples 200] [--connections 100] [--no-analysis] [--out bench/results/peers.json] | temporal [--background 2000] [--samples 200] [--rounds 3] [--out bench/results/temporal.json] | soak [--pglite] [--minutes 30] [--window 60] [--fraction 0.5 | --rate N] [--connections 100] | observability [--requests 200000] [--no-load] [--rate 300] [--duration 10] [--scrape-interval 250] | mcp [--pglite] [--rounds 8] [--samples 100] | failover [--pglite] [--samples 200] | audio [--pglite] [--concurrency 20] [--megabytes 24.9] [--rounds 2] [--model dev-stt] | responses [--pglite] [--connections 100] [--streams 1000] [--background 5000] [--phases memory,sync,ttft,background] [--out FILE] [--profile DIR] [--heap-snapshot DIR] | chat [--pglite] [--connections 200] [--duration 10] [--pin] [--paced-fraction 0.5] [--out bench/results/chat.json] [--profile DIR]';

async function main(argv: string[]) {
  const [name, ...rest] = argv;
  const flag = (option: string) => rest.includes(option);
  const value = (option: string, fallback: string) => {
    const index = rest.indexOf(option);
    return index >= 0 && rest[index + 1] !== undefined ? rest[index + 1] : fallback;
  };
  const number = (option: string, fallback: number) => {
    const parsed = Number(value(option, String(fallback)));
    if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`${option} must be a positive number`);
    return parsed;
  };
  const postgresUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  // dist/bench/run.js → the project root is two levels up.
  const root = path.resolve(__dirname, '..', '..');
  switch (name) {
    case 'peers':
      await runPeersBench({
        postgresUrl,
        rounds: number('--rounds', 5),
        durationSeconds: number('--duration', 4),
        sequential: number('--sequential', 300),
        ttftSamples: number('--samples', 200),
        connections: number('--connections', 100),
        analysis: !flag('--no-analysis'),
        output: path.resolve(root, value('--out', path.join('bench', 'results', 'peers.json'))),
      });
      return;
    case 'temporal':
      await runTemporalBench({
        postgresUrl,
        backgroundCount: number('--background', 2000),
        ttftSamples: number('--samples', 200),
        rounds: number('--rounds', 3),
        output: path.resolve(root, value('--out', path.join('bench', 'results', 'temporal.json'))),
      });
      return;
    case 'chat':
      await runChatBench({
        pglite: flag('--pglite'),
        connections: number('--connections', 200),
        durationSeconds: number('--duration', 10),
        pin: flag('--pin'),
        pacedFraction: number('--paced-fraction', 0.5),
        postgresUrl,
        output: path.resolve(
          root,
          value(
            '--out',
            path.join(
              'bench',
              'results',
              `chat${flag('--pglite') ? '-pglite' : ''}${flag('--pin') ? '-pinned' : ''}.json`,
            ),
          ),
        ),
        profileDir: rest.includes('--profile') ? path.resolve(value('--profile', 'bench/profiles')) : undefined,
      });
      return;
    case 'responses':
      await runResponsesBench({
        pglite: flag('--pglite'),
        connections: number('--connections', 100),
        durationSeconds: number('--duration', 10),
        pin: !flag('--no-pin'),
        streams: number('--streams', 1000),
        backgroundCount: number('--background', 5000),
        postgresUrl,
        output: path.resolve(
          root,
          value('--out', path.join('bench', 'results', flag('--pglite') ? 'responses-pglite.json' : 'responses.json')),
        ),
        phases: phaseList(value('--phases', RESPONSES_PHASES.join(','))),
        profileDir: rest.includes('--profile') ? path.resolve(value('--profile', 'bench/profiles')) : undefined,
        heapSnapshotDir: rest.includes('--heap-snapshot')
          ? path.resolve(value('--heap-snapshot', 'bench/profiles'))
          : undefined,
      });
      return;
    case 'audio': {
      const model = value('--model', 'dev-stt');
      await runAudioBench({
        pglite: flag('--pglite'),
        postgresUrl,
        concurrency: number('--concurrency', 20),
        megabytes: number('--megabytes', 24.9),
        rounds: number('--rounds', 2),
        model,
        output: path.resolve(
          root,
          value('--out', path.join('bench', 'results', `audio-${model}${flag('--pglite') ? '-pglite' : ''}.json`)),
        ),
      });
      return;
    }
    case 'failover':
      await runFailoverBench({
        pglite: flag('--pglite'),
        postgresUrl,
        samples: number('--samples', 200),
        output: path.resolve(
          root,
          value('--out', path.join('bench', 'results', flag('--pglite') ? 'failover-pglite.json' : 'failover.json')),
        ),
      });
      return;
    case 'mcp':
      await runMcpBench({
        pglite: flag('--pglite'),
        postgresUrl,
        rounds: number('--rounds', 8),
        samples: number('--samples', 100),
        output: path.resolve(
          root,
          value('--out', path.join('bench', 'results', flag('--pglite') ? 'mcp-pglite.json' : 'mcp.json')),
        ),
      });
      return;
    case 'soak':
      await runSoakBench({
        pglite: flag('--pglite'),
        postgresUrl,
        minutes: number('--minutes', 30),
        windowSeconds: number('--window', 60),
        fraction: number('--fraction', 0.5),
        rate: rest.includes('--rate') ? number('--rate', 1) : undefined,
        connections: number('--connections', 100),
        output: path.resolve(
          root,
          value('--out', path.join('bench', 'results', flag('--pglite') ? 'soak-pglite.json' : 'soak.json')),
        ),
      });
      return;
    case 'observability':
      await runObservabilityBench({
        requests: number('--requests', 200_000),
        underLoad: flag('--no-load')
          ? undefined
          : {
              postgresUrl,
              rate: number('--rate', 300),
              durationSeconds: number('--duration', 10),
              scrapeIntervalMs: number('--scrape-interval', 250),
            },
        output: path.resolve(root, value('--out', path.join('bench', 'results', 'observability.json'))),
      });
      return;
    default:
      process.stderr.write(`${usage}\n`);
      process.exitCode = 2;
  }
}

function phaseList(text: string): ResponsesPhase[] {
  const phases = text.split(',').filter(Boolean);
  const unknown = phases.filter((phase) => !(RESPONSES_PHASES as readonly string[]).includes(phase));
  if (unknown.length > 0 || phases.length === 0)
    throw new Error(`--phases takes a comma-separated subset of ${RESPONSES_PHASES.join(', ')}`);
  return phases as ResponsesPhase[];
}

main(process.argv.slice(2)).then(
  () => process.exit(process.exitCode ?? 0),
  (error) => {
    process.stderr.write(`bench failed: ${error?.stack ?? error}\n`);
    process.exit(1);
  },
);
