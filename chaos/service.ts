import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * The service under chaos: its API (and, under `--temporal`, worker) processes on a storage of a scenario's own,
 * the API calls scenarios make, and the ledger's invariants as every scenario checks them, through the API only.
 */

export const ADMIN_TOKEN = 'chaos-admin-token-0123456789abcdef';
export const ROOT = path.resolve(__dirname, '..', '..');
export const SERVICE = path.join(ROOT, 'dist', 'bench', 'service-process.js');
export const WORKER = path.join(ROOT, 'dist', 'bench', 'worker-process.js');
/** Worker processes beside the API under `--temporal`. */
export const TEMPORAL_WORKERS = 2;
export const FINAL = new Set(['completed', 'incomplete', 'failed', 'cancelled']);
/** A Response still not final this long after its service came back counts as stuck. */
export const STUCK_AFTER_MS = 60_000;

export interface Service {
  child: ChildProcess;
  baseUrl: string;
  /** The operators' listener (health, readiness, metrics), when the scenario set OPS_PORT. */
  operationsUrl?: string;
  key: string;
  accountId: string;
  /** Under `--temporal`: the worker processes that run the workflows the API starts. */
  workers: ChildProcess[];
}

export interface Storage {
  name: 'postgres' | 'pglite' | 'postgres+temporal';
  /** Under `--temporal`: the server, and the task queue of this storage's service. */
  temporal?: { address: string; taskQueue: string };
  dataDir: string;
  schema?: string;
  postgresUrl?: string;
}

export interface Row {
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
  /** The slowest /healthz answer while the scenario ran (probed throughout), where it was measured. */
  maxHealthMs?: number;
  /** Operations that failed or were refused and were billed anyway (should be 0). */
  billedFailures?: number;
  /** A bound the scenario states for itself was broken (named in the notes). */
  overBound?: boolean;
  /** Generations the service resumed after a hand-over or a crash (continued, regenerated or rerun). */
  resumed?: number;
  notes: string;
}

/** The environment of the service's processes on `storage`. */
export function serviceEnv(storage: Storage, env: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_OPTIONS: '',
    LOG_LEVEL: 'silent',
    ADMIN_TOKEN,
    DATA_DIR: storage.dataDir,
    OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
    ...(storage.postgresUrl ? { DATABASE_URL: storage.postgresUrl } : { DATABASE_URL: '' }),
    ...(storage.temporal
      ? { TEMPORAL_ADDRESS: storage.temporal.address, TEMPORAL_TASK_QUEUE: storage.temporal.taskQueue }
      : {}),
    ...env,
  };
}

/** One Temporal worker process (bench/worker-process.ts) for `storage`; resolves once it polls. */
export function startWorker(storage: Storage, env: Record<string, string>): Promise<ChildProcess> {
  const child = fork(WORKER, ['--schema', storage.schema!], {
    env: serviceEnv(storage, env),
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) =>
      reject(new Error(`worker exited (${code}) before it was ready: ${stderr.slice(-2000)}`)),
    );
  });
}

/** The API (and, under `--temporal`, its workers unless `workers` hands over running ones). */
export async function startService(
  storage: Storage,
  env: Record<string, string>,
  workers?: ChildProcess[],
): Promise<Service> {
  const api = await startApi(storage, env);
  if (!storage.temporal) return { ...api, workers: [] };
  return {
    ...api,
    workers: workers ?? (await Promise.all(Array.from({ length: TEMPORAL_WORKERS }, () => startWorker(storage, env)))),
  };
}

export async function startApi(storage: Storage, env: Record<string, string>): Promise<Omit<Service, 'workers'>> {
  const child = fork(SERVICE, storage.schema ? ['--schema', storage.schema] : [], {
    env: serviceEnv(storage, env),
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number; operationsPort?: number; key: string; accountId: string }) => {
      const operationsUrl = message.operationsPort ? `http://127.0.0.1:${message.operationsPort}` : undefined;
      resolve({
        child,
        baseUrl: `http://127.0.0.1:${message.port}`,
        operationsUrl,
        key: message.key,
        accountId: message.accountId,
      });
      // A service that dies on its own (not killed by a scenario) is a finding: say why.
      child.once('exit', (code, signal) => {
        if (signal !== 'SIGKILL' && signal !== 'SIGTERM' && code !== 0)
          progress(`service ${child.pid} exited by itself (${code ?? signal}): ${stderr.slice(-2000)}`);
      });
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`service exited (${code ?? signal}) before it was ready: ${stderr.slice(-2000)}`)),
    );
  });
}

/** kill -9 of the API process (under Temporal its workers go on). */
export const kill = (service: Service) => killProcess(service.child);

export async function stop(service: Service): Promise<void> {
  for (const child of [service.child, ...service.workers]) await signalled(child, 'SIGTERM');
}

export const progress = (line: string) => process.stdout.write(`  ${line}\n`);

export function killProcess(child: ChildProcess): Promise<void> {
  return signalled(child, 'SIGKILL');
}

/** Sends `signal` to a child process still running; resolves once it has exited (at once if it already had). */
export function signalled(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

export async function api(
  service: Service,
  method: string,
  urlPath: string,
  body?: unknown,
  key = service.key,
): Promise<{ status: number; body: any }> {
  const reply = await fetch(service.baseUrl + urlPath, {
    method,
    headers: { 'x-auth-token': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  return {
    status: reply.status,
    body: text && (reply.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text,
  };
}

export async function admin(service: Service, method: string, urlPath: string, body?: unknown) {
  const reply = await fetch(service.baseUrl + urlPath, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as any };
}

export async function newAccount(service: Service, balance: number): Promise<{ key: string; accountId: string }> {
  const account = await admin(service, 'POST', '/admin/accounts', { name: 'chaos', balance });
  const key = await admin(service, 'POST', `/admin/accounts/${account.body.id}/keys`, {});
  return { key: key.body.key, accountId: account.body.id };
}

/** The ledger as the account sees it: balance, available, and its transactions, all pages. */
export async function ledgerOf(service: Service, key: string) {
  const balance = (await api(service, 'GET', '/v2/organization/balance', undefined, key)).body;
  const transactions: Array<{ id: string; type: string; amount: number; metadata: Record<string, unknown> }> = [];
  let after: string | undefined;
  for (;;) {
    const page = await api(
      service,
      'GET',
      `/v2/organization/transactions?limit=100${after ? `&after_id=${after}` : ''}`,
      undefined,
      key,
    );
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
  // Exact to the kopeck over time (the carry): the debits come to the exact sum of their costs (metadata.cost) plus
  // less than one kopeck, never less than it. Off by a kopeck or more either way counts as a mismatch.
  const excess = debits.reduce((sum, t) => sum + t.amount - Number(t.metadata.cost ?? t.amount), 0);
  const carryOff = excess > -1e-6 && excess < 1 - 1e-6 ? 0 : Math.max(1, Math.ceil(Math.abs(excess)));
  return {
    balance: balance.balance as number,
    held: (balance.balance - balance.available) as number,
    mismatch: balance.balance - (credits - debits.reduce((sum, t) => sum + t.amount, 0)) + carryOff,
    doubleDebits: [...perOperation.values()].filter((count) => count > 1).length,
    transactions,
  };
}

/** The ledger's invariants as table columns: each should be 0. */
export function ledgerColumns(
  ledger: Pick<Awaited<ReturnType<typeof ledgerOf>>, 'doubleDebits' | 'balance' | 'held' | 'mismatch'>,
) {
  return {
    doubleDebits: ledger.doubleDebits,
    negativeBalances: ledger.balance < 0 ? 1 : 0,
    heldAfter: ledger.held,
    ledgerMismatch: ledger.mismatch,
  };
}

/** Polls the Responses until every one is final; answers the ms it took, the ones still not final and the ones gone. */
export async function waitFinal(
  service: Service,
  ids: string[],
  key = service.key,
): Promise<{ ms: number; stuck: string[]; lost: string[] }> {
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
export async function heldDrained(service: Service, key: string): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < STUCK_AFTER_MS) {
    const { body } = await api(service, 'GET', '/v2/organization/balance', undefined, key);
    if (body.available === body.balance) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return Date.now() - started;
}

/** Background and synchronous Responses created at once; the ids of those whose creation was answered. */
export async function burst(
  service: Service,
  count: number,
  input: string,
): Promise<{ ids: string[]; attempted: number }> {
  const replies = await Promise.all(
    Array.from({ length: count }, (_, index) =>
      api(service, 'POST', '/v2/responses', { model: 'dev-echo', input, background: index % 4 !== 0 }).catch(
        () => undefined,
      ),
    ),
  );
  return {
    ids: replies.flatMap((reply) => (reply?.status === 200 ? [reply.body.id as string] : [])),
    attempted: count,
  };
}

export async function newStorage(
  name: Storage['name'],
  postgresUrl: string,
  temporalAddress?: string,
): Promise<Storage> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `chaos-${name.replace('+', '-')}-`));
  if (name === 'pglite') return { name, dataDir };
  const schema = `chaos_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  return {
    name,
    dataDir,
    schema,
    postgresUrl,
    ...(temporalAddress ? { temporal: { address: temporalAddress, taskQueue: `chaos-${schema}` } } : {}),
  };
}

export async function dropStorage(storage: Storage): Promise<void> {
  fs.rmSync(storage.dataDir, { recursive: true, force: true });
  if (!storage.schema) return;
  const client = new pg.Client({ connectionString: storage.postgresUrl });
  await client.connect();
  await client.query(`drop schema ${storage.schema} cascade`);
  await client.end();
}
