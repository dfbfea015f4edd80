import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, SIGNING_SECRET, createSchema, dropSchema, postgresUrl, temporalAddress } from './harness';

/**
 * The service in a process of its own (server-process.ts), for tests that kill it (SIGKILL) and start it again on
 * the same storage: a PGlite data folder, or a Postgres schema when TEST_DATABASE_URL is set.
 */
export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
}

export interface ServerStorage {
  dataDir: string;
  schema?: string;
}

/** A new data folder, and on Postgres a new schema (drop it with dropSchema afterwards). */
export async function newServerStorage(prefix: string): Promise<ServerStorage> {
  return {
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), prefix)),
    schema: postgresUrl ? await createSchema() : undefined,
  };
}

/**
 * The environment that runs a server process on the suite's Temporal server (`npm run test:temporal`), API and worker
 * in one process (`all`), on a task queue of the storage's own, so every process started on it (replicas, a restart)
 * polls the same one; empty when the suite has no Temporal server. Postgres only: a worker's processes share it.
 */
export function temporalEnv(storage: ServerStorage): Record<string, string> {
  if (!temporalAddress || !storage.schema) return {};
  return { TEMPORAL_ADDRESS: temporalAddress, TEMPORAL_TASK_QUEUE: `test-${storage.schema}` };
}

/** Starts the service on `storage` (a 2 s lease unless `env` says otherwise); resolves once it listens. */
export function startServerProcess(storage: ServerStorage, env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', path.join(__dirname, 'server-process.ts')], {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      PORT: '0',
      LOG_LEVEL: 'silent',
      DATA_DIR: storage.dataDir,
      ADMIN_TOKEN,
      KEY_SIGNING_SECRET: SIGNING_SECRET,
      ENGINE_LEASE_MS: '2000',
      // SIGTERM drains for this long before handing over (tests that drain set their own).
      SHUTDOWN_GRACE_MS: '5000',
      ...(postgresUrl ? { DATABASE_URL: postgresUrl, TEST_SCHEMA: storage.schema } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const match = /READY (\d+)/.exec(chunk.toString());
      if (match) resolve({ child, baseUrl: `http://127.0.0.1:${match[1]}` });
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
}

/** A JSON request to a server process; the reply's status and parsed body. */
export async function callServer(
  server: ServerProcess,
  method: string,
  urlPath: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const reply = await fetch(server.baseUrl + urlPath, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as any };
}

/** Sends `signal` (SIGKILL: a crash; SIGTERM: a deploy) and resolves with the exit code once the process is gone. */
export async function stopServer(
  server: ServerProcess | undefined,
  signal: 'SIGKILL' | 'SIGTERM',
): Promise<number | null> {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null)
    return server?.child.exitCode ?? null;
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
  server.child.kill(signal);
  return exited;
}

/** SIGKILL, resolved once the process is gone (nothing to do when it already is). */
export async function killServer(server: ServerProcess | undefined): Promise<void> {
  await stopServer(server, 'SIGKILL');
}

/** A new account (`fields` as POST /admin/accounts takes them) and a key of it on `server`. */
export async function newServerAccount(
  server: ServerProcess,
  fields: Record<string, unknown>,
): Promise<{ accountId: string; key: string; auth: { 'x-auth-token': string } }> {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const account = await callServer(server, 'POST', '/admin/accounts', fields, admin);
  const key = (await callServer(server, 'POST', `/admin/accounts/${account.body.id}/keys`, {}, admin)).body
    .key as string;
  return { accountId: account.body.id, key, auth: { 'x-auth-token': key } };
}

/**
 * Jest hooks for a test's server processes: a new storage before each test; after it, every process it started
 * killed and the storage removed. `start` starts one on the current storage (`env` over the file's `baseEnv`).
 */
export function useServerProcesses(
  prefix: string,
  baseEnv: Record<string, string> = {},
  options: {
    /** `temporal`: under `npm run test:temporal`, the processes run on its Temporal server (temporalEnv). */
    engine?: 'temporal';
  } = {},
) {
  let storage: ServerStorage | undefined;
  const servers: ServerProcess[] = [];
  beforeEach(async () => {
    storage = await newServerStorage(prefix);
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await killServer(server);
    if (!storage) return;
    fs.rmSync(storage.dataDir, { recursive: true, force: true });
    if (storage.schema) await dropSchema(storage.schema);
  });
  return {
    get storage(): ServerStorage {
      return storage!;
    },
    async start(env: Record<string, string> = {}): Promise<ServerProcess> {
      const engineEnv = options.engine === 'temporal' ? temporalEnv(storage!) : {};
      const server = await startServerProcess(storage!, { ...engineEnv, ...baseEnv, ...env });
      servers.push(server);
      return server;
    },
  };
}
