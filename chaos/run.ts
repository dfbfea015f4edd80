import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI, type FakeVendorServer } from '../test/fakes';
import type { FakeScript } from '../test/fakes/fake-script';
import { startTemporalDevServer } from '../bench/temporal-dev-server';
import { hostileInput } from './hostile-input';
import { rollingRestart } from './rolling-restart';
import { vendorDown } from './vendor-down';
import {
  api,
  burst,
  dropStorage,
  heldDrained,
  kill,
  killProcess,
  ledgerColumns,
  ledgerOf,
  newAccount,
  newStorage,
  progress,
  ROOT,
  SERVICE,
  startService,
  startWorker,
  stop,
  waitFinal,
  type Row,
  type Service,
  type Storage,
} from './service';

/**
 * `npm run chaos` (not part of `npm test`): the service in processes of its own, on Postgres and on PGlite, under
 * what production does to it: kill -9 during creation bursts and generation, vendor faults from a fake OpenAI
 * (429, 5xx, a hang, malformed SSE, a stream dropped midway), that vendor down behind a fallback route under load
 * (chaos/vendor-down.ts), an overdraft burst, an idle-socket flood and hostile
 * input (chaos/hostile-input.ts: crafted uploads, trickled bodies, clients that never read, hanging webhook receivers,
 * oversized MCP listings, with /healthz latency and memory measured throughout). Every
 * check goes through the API (statuses, balance, available, transactions), so it reads the same on both databases.
 * Prints a table and writes chaos/results/chaos.json. Postgres from CHAOS_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test). `--temporal`: the same scenarios, and the kill -9 of a worker, with
 * the API and two workers in processes of their own on Postgres and a Temporal dev server of the run's own
 * (chaos/results/chaos-temporal.json).
 */

/**
 * Rounds of a burst of 80 Responses (a quarter synchronous) cut `pauseMs` into it by `cut`, which kills a process
 * and answers the service as it stands after (the process restarted or replaced); after each round every Response
 * answered so far must end. Answers the service and the round totals, once every hold is settled.
 */
async function burstsCutBy(
  storage: Storage,
  rounds: number,
  pauseMs: { min: number; spread: number },
  cut: (service: Service, round: number) => Promise<Service>,
) {
  let service = await startService(storage, {});
  const { key } = service;
  const ids: string[] = [];
  let attempted = 0;
  let maxRecoveryMs = 0;
  const stuck = new Set<string>();
  const lost = new Set<string>();
  for (let round = 0; round < rounds; round++) {
    // Creations in flight and generations running when the process dies.
    const creating = burst(service, 80, '/delay 25 /words 40');
    await new Promise((resolve) => setTimeout(resolve, pauseMs.min + Math.floor(Math.random() * pauseMs.spread)));
    service = { ...(await cut(service, round)), key };
    // Creations a kill cut off failed at the client: not counted (their ids were never answered).
    const created = await creating;
    progress(
      `${storage.name}: round ${round + 1}: ${created.ids.length} of ${created.attempted} creations answered; waiting for every Response to end`,
    );
    ids.push(...created.ids);
    attempted += created.attempted;
    const outcome = await waitFinal(service, ids, key);
    maxRecoveryMs = Math.max(maxRecoveryMs, outcome.ms);
    outcome.stuck.forEach((id) => stuck.add(id));
    outcome.lost.forEach((id) => lost.add(id));
  }
  // Creations a kill cut off after they were written (their ids never answered) run to the end too: every hold is
  // settled once they have.
  maxRecoveryMs = Math.max(maxRecoveryMs, await heldDrained(service, key));
  return { service, ids, attempted, maxRecoveryMs, stuck: stuck.size, lost: lost.size };
}

async function killLoop(storage: Storage, rounds: number): Promise<Row> {
  const { service, ids, attempted, maxRecoveryMs, stuck, lost } = await burstsCutBy(
    storage,
    rounds,
    { min: 150, spread: 250 },
    async (running, round) => {
      await kill(running);
      progress(`${storage.name}: round ${round + 1}: API killed; restarting`);
      // Under Temporal only the API dies here; the workers go on (workerKillLoop kills them).
      return startService(storage, {}, running.workers);
    },
  );
  const ledger = await ledgerOf(service, service.key);
  await stop(service);
  return {
    database: storage.name,
    scenario: `kill -9 during bursts (${rounds} rounds)`,
    operations: attempted,
    stuck,
    lost,
    ...ledgerColumns(ledger),
    maxRecoveryMs,
    notes: `${ids.length} creations answered before the kill`,
  };
}

/**
 * Under `--temporal`: kill -9 of a worker process in the middle of bursts, then a new one in its place. Temporal
 * notices the dead worker's activities when their heartbeats stop (GENERATION_ACTIVITY's heartbeat timeout) and
 * runs them again on a live worker, which continues a Response from the text it had streamed.
 */
async function workerKillLoop(storage: Storage, rounds: number): Promise<Row> {
  const { service, ids, attempted, maxRecoveryMs, stuck, lost } = await burstsCutBy(
    storage,
    rounds,
    { min: 300, spread: 400 },
    async (running, round) => {
      const victim = round % running.workers.length;
      await killProcess(running.workers[victim]!);
      running.workers[victim] = await startWorker(storage, {});
      progress(`${storage.name}: round ${round + 1}: worker ${victim + 1} killed and replaced`);
      return running;
    },
  );
  const ledger = await ledgerOf(service, service.key);
  const statuses = new Map<string, number>();
  for (const id of ids) {
    const { body } = await api(service, 'GET', `/v2/responses/${id}`);
    const label = body.error?.code ? `${body.status} (${body.error.code})` : body.status;
    statuses.set(label, (statuses.get(label) ?? 0) + 1);
  }
  await stop(service);
  return {
    database: storage.name,
    scenario: `kill -9 of a worker during bursts (${rounds} rounds)`,
    operations: attempted,
    stuck,
    lost,
    ...ledgerColumns(ledger),
    maxRecoveryMs,
    recoveryBudgetMs: WORKER_RECOVERY_BUDGET_MS,
    notes: [...statuses].map(([status, count]) => `${count} ${status}`).join(', '),
  };
}

/** A dead worker's activities run again after their heartbeat timeout (10 s), then take their own time. */
const WORKER_RECOVERY_BUDGET_MS = 30_000;

async function vendorFaults(storage: Storage, fake: FakeVendorServer): Promise<Row> {
  const service = await startService(storage, {
    OPENAI_API_KEY: 'chaos-key',
    OPENAI_BASE_URL: fake.baseURL,
    PROVIDER_TIMEOUT_MS: '2000',
    PROVIDER_MAX_RETRIES: '1',
  });
  const faults: Array<[string, FakeScript]> = [
    ['429', { status: 429, retryAfter: '1' }],
    ['500', { status: 500 }],
    ['503', { status: 503 }],
    ['hang', { hang: true }],
    ['malformed SSE', { malformedSse: true }],
    ['drop mid-stream', { dropAfterDeltas: 2 }],
    ['error event', { errorEventAfterDeltas: 1 }],
  ];
  const outcomes: string[] = [];
  let maxMs = 0;
  let stuck = 0;
  let lost = 0;
  for (const [name, fault] of faults) {
    fake.reset();
    // The fault on every attempt (the retry included), so the Response must end failed, cleanly.
    fake.script(fault, fault, fault);
    const created = await api(service, 'POST', '/v2/responses', {
      model: 'gpt-4.1-mini',
      input: `chaos ${name}`,
      stream: false,
    });
    if (created.status !== 200) {
      outcomes.push(`${name}: ${created.status}`);
      continue;
    }
    const outcome = await waitFinal(service, [created.body.id]);
    maxMs = Math.max(maxMs, outcome.ms);
    stuck += outcome.stuck.length;
    lost += outcome.lost.length;
    outcomes.push(`${name}: ${(await api(service, 'GET', `/v2/responses/${created.body.id}`)).body.status}`);
  }
  const ledger = await ledgerOf(service, service.key);
  await stop(service);
  return {
    database: storage.name,
    scenario: 'vendor faults (each on every attempt)',
    operations: faults.length,
    stuck,
    lost,
    ...ledgerColumns(ledger),
    maxRecoveryMs: maxMs,
    notes: outcomes.join('; '),
  };
}

async function overdraft(storage: Storage): Promise<Row> {
  const service = await startService(storage, {});
  const account = await newAccount(service, 1000);
  const replies = await Promise.all(
    Array.from({ length: 500 }, (_, index) =>
      index % 2 === 0
        ? api(
            service,
            'POST',
            '/v2/responses',
            { model: 'dev-echo', input: '/words 40', background: false },
            account.key,
          )
        : api(
            service,
            'POST',
            '/v2/chat/completions',
            { model: 'dev-echo', messages: [{ role: 'user', content: '/words 40' }] },
            account.key,
          ),
    ),
  );
  const paid = replies.filter((reply) => reply.status === 200).length;
  const refused = replies.filter((reply) => reply.status === 402).length;
  const ledger = await ledgerOf(service, account.key);
  await stop(service);
  return {
    database: storage.name,
    scenario: 'overdraft burst: 500 at once on 1,000 kopecks',
    operations: replies.length,
    stuck: 0,
    lost: replies.length - paid - refused,
    ...ledgerColumns(ledger),
    maxRecoveryMs: null,
    notes: `${paid} paid, ${refused} refused with 402, balance left ${ledger.balance}`,
  };
}

async function idleFlood(storage: Storage, sockets: number): Promise<Row> {
  const service = await startService(storage, { HTTP_MAX_CONNECTIONS: '10000' });
  const port = Number(new URL(service.baseUrl).port);
  const open: net.Socket[] = [];
  let failed = 0;
  for (let offset = 0; offset < sockets; offset += 500) {
    await Promise.all(
      Array.from(
        { length: Math.min(500, sockets - offset) },
        () =>
          new Promise<void>((resolve) => {
            const socket = net.connect(port, '127.0.0.1');
            socket.on('error', () => undefined);
            socket.once('connect', () => (open.push(socket), resolve()));
            socket.once('error', () => (failed++, resolve()));
          }),
      ),
    );
  }
  const started = Date.now();
  const health = await fetch(`${service.baseUrl}/healthz`).then(
    (reply) => reply.status,
    () => 0,
  );
  const balance = await api(service, 'GET', '/v2/organization/balance').then(
    (reply) => reply.status,
    () => 0,
  );
  const answeredMs = Date.now() - started;
  const stillOpen = open.filter((socket) => !socket.destroyed && socket.readyState === 'open').length;
  open.forEach((socket) => socket.destroy());
  await stop(service);
  return {
    database: storage.name,
    scenario: `idle-socket flood (${sockets} sockets)`,
    operations: sockets,
    stuck: health === 200 && balance === 200 ? 0 : 1,
    lost: 0,
    doubleDebits: 0,
    negativeBalances: 0,
    heldAfter: 0,
    ledgerMismatch: 0,
    maxRecoveryMs: answeredMs,
    notes: `/healthz ${health}, API ${balance} in ${answeredMs} ms; ${stillOpen} idle sockets still open (cap 10,000), ${failed} refused`,
  };
}

function table(rows: Row[]): string {
  const header = [
    'database',
    'scenario',
    'operations',
    'stuck',
    'lost',
    'double debits',
    'negative balances',
    'held after',
    'ledger mismatch',
    'failures billed',
    'resumed',
    'max recovery ms',
    'max health ms',
  ];
  const lines = rows.map((row) =>
    [
      row.database,
      row.scenario,
      row.operations,
      row.stuck,
      row.lost,
      row.doubleDebits,
      row.negativeBalances,
      row.heldAfter,
      row.ledgerMismatch,
      row.billedFailures ?? '-',
      row.resumed ?? '-',
      row.maxRecoveryMs ?? '-',
      row.maxHealthMs ?? '-',
    ].map(String),
  );
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => line[column]!.length)));
  const format = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ');
  return [format(header), widths.map((width) => '-'.repeat(width)).join('-|-'), ...lines.map(format)].join('\n');
}

async function main(argv: string[]) {
  const postgresUrl = process.env.CHAOS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const onTemporal = argv.includes('--temporal');
  const databases: Array<Storage['name']> = onTemporal
    ? ['postgres+temporal']
    : argv.includes('--pglite-only')
      ? ['pglite']
      : argv.includes('--postgres-only')
        ? ['postgres']
        : ['postgres', 'pglite'];
  const roundsIndex = argv.indexOf('--rounds');
  const rounds = roundsIndex >= 0 ? Number(argv[roundsIndex + 1]) : 5;
  // `--only kill,hostile`: just these scenarios (kill, worker-kill, vendor-faults, vendor-down, overdraft, idle-flood, hostile,
  // rolling-restart).
  const onlyIndex = argv.indexOf('--only');
  const only = onlyIndex >= 0 ? argv[onlyIndex + 1]!.split(',') : [];
  const socketsIndex = argv.indexOf('--sockets');
  const sockets = socketsIndex >= 0 ? Number(argv[socketsIndex + 1]) : 19_000;
  if (!fs.existsSync(SERVICE)) throw new Error(`${SERVICE} is missing: run npm run build first (npm run chaos does)`);
  const fake = await startFakeOpenAI();
  // `--temporal`: API and workers in processes of their own on a Temporal server of this run's own.
  const temporal = onTemporal ? await startTemporalDevServer() : undefined;
  const rows: Row[] = [];
  try {
    for (const name of databases) {
      const scenarios: Array<[string, (storage: Storage) => Promise<Row>]> = [
        ['kill', (storage) => killLoop(storage, rounds)],
        ...(onTemporal
          ? [
              ['worker-kill', (storage: Storage) => workerKillLoop(storage, rounds)] as [
                string,
                (storage: Storage) => Promise<Row>,
              ],
            ]
          : []),
        ['vendor-faults', (storage) => vendorFaults(storage, fake)],
        ['vendor-down', (storage) => vendorDown(storage, fake)],
        ['overdraft', overdraft],
        ['idle-flood', (storage) => idleFlood(storage, sockets)],
        ['hostile', hostileInput],
        ['rolling-restart', rollingRestart],
      ];
      for (const [scenarioName, scenario] of scenarios) {
        if (only.length > 0 && !only.includes(scenarioName)) continue;
        const storage = await newStorage(name, postgresUrl, temporal?.address);
        try {
          progress(`${name}: scenario ${rows.length + 1}`);
          const row = await scenario(storage);
          rows.push(row);
          process.stdout.write(`${row.database}: ${row.scenario}: ${row.notes}\n`);
        } finally {
          await dropStorage(storage);
        }
      }
    }
  } finally {
    await fake.close();
    await temporal?.stop();
  }
  process.stdout.write(`\n${table(rows)}\n`);
  const failures = rows.filter(
    (row) =>
      row.stuck +
        row.lost +
        row.doubleDebits +
        row.negativeBalances +
        row.heldAfter +
        Math.abs(row.ledgerMismatch) +
        (row.billedFailures ?? 0) >
        0 ||
      row.overBound ||
      (row.scenario.startsWith('kill') && (row.maxRecoveryMs ?? 0) > (row.recoveryBudgetMs ?? 5000)),
  );
  // A run of some scenarios only (`--only`) is written beside the full runs', not over them.
  const output = path.join(
    ROOT,
    'chaos',
    'results',
    `chaos${onTemporal ? '-temporal' : ''}${only.length > 0 ? `-${only.join('-')}` : ''}.json`,
  );
  fs.mkdirSync(path.dirname(output), { recursive: true });
  fs.writeFileSync(
    output,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        machine: { cpus: os.cpus().length, node: process.version },
        rows,
        failures: failures.length,
      },
      null,
      2,
    ) + '\n',
  );
  process.stdout.write(
    `\n${failures.length === 0 ? 'all invariants held' : `${failures.length} scenario(s) broke an invariant`}; written to ${path.relative(ROOT, output)}\n`,
  );
  process.exitCode = failures.length === 0 ? 0 : 1;
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
