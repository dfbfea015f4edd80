import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startFakeOpenAI, type FakeVendorServer } from '../test/fakes';
import type { FakeScript } from '../test/fakes/fake-script';
import { startTemporalDevServer } from '../bench/temporal-dev-server';

/**
 * `npm run chaos` (not part of `npm test`): the service in processes of its own, on Postgres and on PGlite, under
 * what production does to it: kill -9 during creation bursts and generation, vendor faults from a fake OpenAI
 * (429, 5xx, a hang, malformed SSE, a stream dropped midway), an overdraft burst and an idle-socket flood. Every
 * check goes through the API (statuses, balance, available, transactions), so it reads the same on both databases.
 * Prints a table and writes chaos/results/chaos.json. Postgres from CHAOS_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test). `--temporal`: the same scenarios, and the kill -9 of a worker, with
 * the API and two workers in processes of their own on Postgres and a Temporal dev server of the run's own
 * (chaos/results/chaos-temporal.json).
 */

const ADMIN_TOKEN = 'chaos-admin-token-0123456789abcdef';
const ROOT = path.resolve(__dirname, '..', '..');
const SERVICE = path.join(ROOT, 'dist', 'bench', 'service-process.js');
const WORKER = path.join(ROOT, 'dist', 'bench', 'worker-process.js');
/** Worker processes beside the API under `--temporal`. */
const TEMPORAL_WORKERS = 2;
const FINAL = new Set(['completed', 'incomplete', 'failed', 'cancelled']);
/** A Response still not final this long after its service came back counts as stuck. */
const STUCK_AFTER_MS = 60_000;

interface Service {
  child: ChildProcess;
  baseUrl: string;
  key: string;
  accountId: string;
  /** Under `--temporal`: the worker processes that run the workflows the API starts. */
  workers: ChildProcess[];
}

interface Storage {
  name: 'postgres' | 'pglite' | 'postgres+temporal';
  /** Under `--temporal`: the server, and the task queue of this storage's service. */
  temporal?: { address: string; taskQueue: string };
  dataDir: string;
  schema?: string;
  postgresUrl?: string;
}

interface Row {
  database: string;
  scenario: string;
  operations: number;
  stuck: number;
  lost: number;
  doubleDebits: number;
  negativeBalances: number;
  heldAfter: number;
  ledgerMismatch: number;
  maxRecoveryMs: number | null;
  /** The longest recovery this scenario may take (kill scenarios). */
  recoveryBudgetMs?: number;
  notes: string;
}

/** The environment of the service's processes on `storage`. */
function serviceEnv(storage: Storage, env: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_OPTIONS: '',
    LOG_LEVEL: 'silent',
    ADMIN_TOKEN,
    DATA_DIR: storage.dataDir,
    OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
    ...(storage.postgresUrl ? { DATABASE_URL: storage.postgresUrl } : { DATABASE_URL: '' }),
    ...(storage.temporal ? { TEMPORAL_ADDRESS: storage.temporal.address, TEMPORAL_TASK_QUEUE: storage.temporal.taskQueue } : {}),
    ...env,
  };
}

/** One Temporal worker process (bench/worker-process.ts) for `storage`; resolves once it polls. */
function startWorker(storage: Storage, env: Record<string, string>): Promise<ChildProcess> {
  const child = fork(WORKER, ['--schema', storage.schema!], { env: serviceEnv(storage, env), stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready: ${stderr.slice(-2000)}`)));
  });
}

/** The API (and, under `--temporal`, its workers unless `workers` hands over running ones). */
async function startService(storage: Storage, env: Record<string, string>, workers?: ChildProcess[]): Promise<Service> {
  const api = await startApi(storage, env);
  if (!storage.temporal) return { ...api, workers: [] };
  return { ...api, workers: workers ?? (await Promise.all(Array.from({ length: TEMPORAL_WORKERS }, () => startWorker(storage, env)))) };
}

async function startApi(storage: Storage, env: Record<string, string>): Promise<Omit<Service, 'workers'>> {
  const child = fork(SERVICE, storage.schema ? ['--schema', storage.schema] : [], { env: serviceEnv(storage, env), stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number; key: string; accountId: string }) => {
      resolve({ child, baseUrl: `http://127.0.0.1:${message.port}`, key: message.key, accountId: message.accountId });
      // A service that dies on its own (not killed by a scenario) is a finding: say why.
      child.once('exit', (code, signal) => {
        if (signal !== 'SIGKILL' && signal !== 'SIGTERM' && code !== 0) progress(`service ${child.pid} exited by itself (${code ?? signal}): ${stderr.slice(-2000)}`);
      });
    });
    child.once('exit', (code, signal) => reject(new Error(`service exited (${code ?? signal}) before it was ready: ${stderr.slice(-2000)}`)));
  });
}

/** kill -9 of the API process (under Temporal its workers go on). */
const kill = (service: Service) => killProcess(service.child);

async function stop(service: Service): Promise<void> {
  for (const child of [service.child, ...service.workers]) {
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }
}

const progress = (line: string) => process.stdout.write(`  ${line}\n`);

function killProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

async function api(service: Service, method: string, urlPath: string, body?: unknown, key = service.key): Promise<{ status: number; body: any }> {
  const reply = await fetch(service.baseUrl + urlPath, {
    method,
    headers: { 'x-auth-token': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  return { status: reply.status, body: text && (reply.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text };
}

async function admin(service: Service, method: string, urlPath: string, body?: unknown) {
  const reply = await fetch(service.baseUrl + urlPath, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as any };
}

async function newAccount(service: Service, balance: number): Promise<{ key: string; accountId: string }> {
  const account = await admin(service, 'POST', '/admin/accounts', { name: 'chaos', balance });
  const key = await admin(service, 'POST', `/admin/accounts/${account.body.id}/keys`, {});
  return { key: key.body.key, accountId: account.body.id };
}

/** The ledger as the account sees it: balance, available, and its transactions, all pages. */
async function ledgerOf(service: Service, key: string) {
  const balance = (await api(service, 'GET', '/v2/organization/balance', undefined, key)).body;
  const transactions: Array<{ id: string; type: string; amount: number; metadata: Record<string, unknown> }> = [];
  let after: string | undefined;
  for (;;) {
    const page = await api(service, 'GET', `/v2/organization/transactions?limit=100${after ? `&after_id=${after}` : ''}`, undefined, key);
    const data = page.body.data ?? page.body.transactions ?? page.body;
    if (!Array.isArray(data) || data.length === 0) break;
    transactions.push(...data);
    if (data.length < 100) break;
    after = data.at(-1).id;
  }
  const credits = transactions.filter((t) => t.type === 'credit').reduce((sum, t) => sum + t.amount, 0);
  const debits = transactions.filter((t) => t.type === 'debit');
  const perOperation = new Map<string, number>();
  for (const debit of debits) {
    const operation = String(debit.metadata.response_id ?? debit.metadata.request_id ?? debit.id);
    perOperation.set(operation, (perOperation.get(operation) ?? 0) + 1);
  }
  return {
    balance: balance.balance as number,
    held: (balance.balance - balance.available) as number,
    mismatch: balance.balance - (credits - debits.reduce((sum, t) => sum + t.amount, 0)),
    doubleDebits: [...perOperation.values()].filter((count) => count > 1).length,
  };
}

/** The ledger's invariants as table columns: each should be 0. */
function ledgerColumns(ledger: Awaited<ReturnType<typeof ledgerOf>>) {
  return { doubleDebits: ledger.doubleDebits, negativeBalances: ledger.balance < 0 ? 1 : 0, heldAfter: ledger.held, ledgerMismatch: ledger.mismatch };
}

/** Polls the Responses until every one is final; answers the ms it took, the ones still not final and the ones gone. */
async function waitFinal(service: Service, ids: string[], key = service.key): Promise<{ ms: number; stuck: string[]; lost: string[] }> {
  const started = Date.now();
  const pending = new Set(ids);
  const lost: string[] = [];
  while (pending.size > 0 && Date.now() - started < STUCK_AFTER_MS) {
    await Promise.all(
      [...pending].map(async (id) => {
        const reply = await api(service, 'GET', `/v2/responses/${id}`, undefined, key).catch(() => undefined);
        if (!reply) return;
        if (reply.status === 404) {
          lost.push(id);
          pending.delete(id);
        } else if (FINAL.has(reply.body.status)) pending.delete(id);
      }),
    );
    if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { ms: Date.now() - started, stuck: [...pending], lost };
}

/** Polls until the account holds nothing (every operation in flight settled), up to STUCK_AFTER_MS; answers the ms it took. */
async function heldDrained(service: Service, key: string): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < STUCK_AFTER_MS) {
    const { body } = await api(service, 'GET', '/v2/organization/balance', undefined, key);
    if (body.available === body.balance) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return Date.now() - started;
}

/** Background and synchronous Responses created at once; the ids of those whose creation was answered. */
async function burst(service: Service, count: number, input: string): Promise<{ ids: string[]; attempted: number }> {
  const replies = await Promise.all(
    Array.from({ length: count }, (_, index) =>
      api(service, 'POST', '/v2/responses', { model: 'dev-echo', input, background: index % 4 !== 0 }).catch(() => undefined),
    ),
  );
  return { ids: replies.flatMap((reply) => (reply?.status === 200 ? [reply.body.id as string] : [])), attempted: count };
}

/**
 * Rounds of a burst of 80 Responses (a quarter synchronous) cut `pauseMs` into it by `cut`, which kills a process
 * and answers the service as it stands after (the process restarted or replaced); after each round every Response
 * answered so far must end. Answers the service and the round totals, once every hold is settled.
 */
async function burstsCutBy(storage: Storage, rounds: number, pauseMs: { min: number; spread: number }, cut: (service: Service, round: number) => Promise<Service>) {
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
    progress(`${storage.name}: round ${round + 1}: ${created.ids.length} of ${created.attempted} creations answered; waiting for every Response to end`);
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
  const { service, ids, attempted, maxRecoveryMs, stuck, lost } = await burstsCutBy(storage, rounds, { min: 150, spread: 250 }, async (running, round) => {
    await kill(running);
    progress(`${storage.name}: round ${round + 1}: API killed; restarting`);
    // Under Temporal only the API dies here; the workers go on (workerKillLoop kills them).
    return startService(storage, {}, running.workers);
  });
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
  const { service, ids, attempted, maxRecoveryMs, stuck, lost } = await burstsCutBy(storage, rounds, { min: 300, spread: 400 }, async (running, round) => {
    const victim = round % running.workers.length;
    await killProcess(running.workers[victim]!);
    running.workers[victim] = await startWorker(storage, {});
    progress(`${storage.name}: round ${round + 1}: worker ${victim + 1} killed and replaced`);
    return running;
  });
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
  const service = await startService(storage, { OPENAI_API_KEY: 'chaos-key', OPENAI_BASE_URL: fake.baseURL, PROVIDER_TIMEOUT_MS: '2000', PROVIDER_MAX_RETRIES: '1' });
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
    const created = await api(service, 'POST', '/v2/responses', { model: 'gpt-4.1-mini', input: `chaos ${name}`, stream: false });
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
        ? api(service, 'POST', '/v2/responses', { model: 'dev-echo', input: '/words 40', background: false }, account.key)
        : api(service, 'POST', '/v2/chat/completions', { model: 'dev-echo', messages: [{ role: 'user', content: '/words 40' }] }, account.key),
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
      Array.from({ length: Math.min(500, sockets - offset) }, () =>
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
  const health = await fetch(`${service.baseUrl}/healthz`).then((reply) => reply.status, () => 0);
  const balance = await api(service, 'GET', '/v2/organization/balance').then((reply) => reply.status, () => 0);
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

async function newStorage(name: Storage['name'], postgresUrl: string, temporalAddress?: string): Promise<Storage> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `chaos-${name.replace('+', '-')}-`));
  if (name === 'pglite') return { name, dataDir };
  const schema = `chaos_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  return { name, dataDir, schema, postgresUrl, ...(temporalAddress ? { temporal: { address: temporalAddress, taskQueue: `chaos-${schema}` } } : {}) };
}

async function dropStorage(storage: Storage): Promise<void> {
  fs.rmSync(storage.dataDir, { recursive: true, force: true });
  if (!storage.schema) return;
  const client = new pg.Client({ connectionString: storage.postgresUrl });
  await client.connect();
  await client.query(`drop schema ${storage.schema} cascade`);
  await client.end();
}

function table(rows: Row[]): string {
  const header = ['database', 'scenario', 'operations', 'stuck', 'lost', 'double debits', 'negative balances', 'held after', 'ledger mismatch', 'max recovery ms'];
  const lines = rows.map((row) => [row.database, row.scenario, row.operations, row.stuck, row.lost, row.doubleDebits, row.negativeBalances, row.heldAfter, row.ledgerMismatch, row.maxRecoveryMs ?? '-'].map(String));
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
  const socketsIndex = argv.indexOf('--sockets');
  const sockets = socketsIndex >= 0 ? Number(argv[socketsIndex + 1]) : 19_000;
  if (!fs.existsSync(SERVICE)) throw new Error(`${SERVICE} is missing: run npm run build first (npm run chaos does)`);
  const fake = await startFakeOpenAI();
  // `--temporal`: API and workers in processes of their own on a Temporal server of this run's own.
  const temporal = onTemporal ? await startTemporalDevServer() : undefined;
  const rows: Row[] = [];
  try {
    for (const name of databases) {
      for (const scenario of [
        (storage: Storage) => killLoop(storage, rounds),
        ...(onTemporal ? [(storage: Storage) => workerKillLoop(storage, rounds)] : []),
        (storage: Storage) => vendorFaults(storage, fake),
        overdraft,
        (storage: Storage) => idleFlood(storage, sockets),
      ]) {
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
      row.stuck + row.lost + row.doubleDebits + row.negativeBalances + row.heldAfter + Math.abs(row.ledgerMismatch) > 0 ||
      (row.scenario.startsWith('kill') && (row.maxRecoveryMs ?? 0) > (row.recoveryBudgetMs ?? 5000)),
  );
  const output = path.join(ROOT, 'chaos', 'results', onTemporal ? 'chaos-temporal.json' : 'chaos.json');
  fs.mkdirSync(path.dirname(output), { recursive: true });
  fs.writeFileSync(output, JSON.stringify({ date: new Date().toISOString(), machine: { cpus: os.cpus().length, node: process.version }, rows, failures: failures.length }, null, 2) + '\n');
  process.stdout.write(`\n${failures.length === 0 ? 'all invariants held' : `${failures.length} scenario(s) broke an invariant`}; written to ${path.relative(ROOT, output)}\n`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
