import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Server } from 'node:http';
import pg from 'pg';
import { loadConfig } from '../../src/config';
import { createHttpServer } from '../../src/http/server';
import { createRuntime, type Runtime } from '../../src/runtime';
import type { Logger } from '../../src/logger';
import { startTemporalWorker, type RunningWorker } from '../../src/process-lifecycle';
import { workflowIdOf, type JobRef } from '../../src/engine/job-kind';
import { Client, Connection } from '@temporalio/client';

/**
 * Starts the real app on a loopback port. The database is PGlite in memory, or, when TEST_DATABASE_URL
 * is set, a fresh Postgres schema dropped at close: runs never see each other's rows. When TEST_TEMPORAL_ADDRESS
 * is set (`npm run test:temporal`), the app runs on that Temporal server: the API starts workflows and a
 * production worker (startTemporalWorker, as `npm run worker` starts it) in this process runs them, on a task queue of the
 * app's own (named after its database, so a restarted app picks up the workflows its predecessor started).
 */
export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const SIGNING_SECRET = 'test-signing-secret-0123456789abcdef0123456789';
export const postgresUrl = process.env.TEST_DATABASE_URL;
export const temporalAddress = process.env.TEST_TEMPORAL_ADDRESS;
/**
 * A test of what only the embedded engine does: `npm run test:temporal` skips it. Say why at the call; the reasons
 * are listed in test/README.md.
 */
export const itOnEmbeddedEngine: jest.It = temporalAddress ? it.skip : it;
/** The workflow bundle the suite's global setup built from workflows/ (test/support/temporal-global-setup.ts). */
const workflowBundlePath = process.env.TEST_TEMPORAL_WORKFLOW_BUNDLE;

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Keep PGlite on disk in this folder (restart tests); default is in memory. */
  dataDir?: string;
  /** Reuse this Postgres schema (restart tests). */
  schema?: string;
  /** The app's logger (default: silent). */
  logger?: Logger;
  /** `embedded`: this app runs the embedded engine even under `npm run test:temporal` (engine machinery tests). */
  engine?: 'embedded';
  /** Under Temporal: `false` starts no worker in this app (an API-only replica; another app's worker runs its jobs). */
  worker?: false;
}

export interface ApiReply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class TestApp {
  private constructor(
    readonly runtime: Runtime,
    private readonly server: Server,
    readonly baseUrl: string,
    readonly schema: string | undefined,
    private readonly ownsSchema: boolean,
    /** The in-process Temporal worker, when the app runs on Temporal. */
    private readonly temporalWorker?: RunningWorker,
  ) {}

  static async start(options: TestAppOptions = {}): Promise<TestApp> {
    const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-test-'));
    let schema = options.schema;
    let ownsSchema = false;
    if (postgresUrl && !schema) {
      schema = await createSchema();
      ownsSchema = true;
    }
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN,
      KEY_SIGNING_SECRET: SIGNING_SECRET,
      DATA_DIR: dataDir,
      OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
      // Tests that write to PGlite directly block this process for seconds; with Node's 5 s default the server
      // may close an idle keep-alive socket just as the test's next request goes out on it (ECONNRESET).
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '60000',
      HTTP_IDLE_TIMEOUT_MS: '60000',
      ...(postgresUrl ? { DATABASE_URL: postgresUrl, DATABASE_POOL_SIZE: '10' } : {}),
      ...(temporalAddress && options.engine !== 'embedded'
        ? { TEMPORAL_ADDRESS: temporalAddress, TEMPORAL_TASK_QUEUE: `test-${schema ?? path.basename(dataDir)}` }
        : {}),
      ...options.env,
    });
    const runtime = await createRuntime(config, {
      database: { inMemory: !options.dataDir, schema },
      logger: options.logger,
    });
    let temporalWorker: RunningWorker | undefined;
    try {
      if (config.engine.temporal && options.worker !== false) {
        temporalWorker = await startTemporalWorker(runtime, { workflowBundlePath, shutdownGraceMs: 0 });
      }
      await runtime.startEngine();
    } catch (error) {
      await temporalWorker?.stop();
      await runtime.close();
      throw error;
    }
    const server = createHttpServer(runtime.app, config.http).listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    return new TestApp(
      runtime,
      server,
      `http://127.0.0.1:${port}`,
      schema,
      ownsSchema && !options.schema,
      temporalWorker,
    );
  }

  /** The engine the app runs on. */
  get engine(): 'embedded' | 'temporal' {
    return this.runtime.deps.engine.name;
  }

  private temporalClient?: Promise<{ client: Client; connection: Connection }>;

  /**
   * Waits until a job's workflow has ended (its last step, the webhook included, is done): on the embedded engine
   * its `jobs` row ends; on Temporal, the workflow's result (the `jobs` row is only the launch outbox there).
   */
  async untilJobEnded(job: JobRef, timeoutMs = 10_000): Promise<void> {
    if (this.engine === 'temporal') {
      const { address, namespace } = this.runtime.deps.config.engine.temporal!;
      this.temporalClient ??= Connection.connect({ address }).then((connection) => ({
        connection,
        client: new Client({ connection, namespace }),
      }));
      const { client } = await this.temporalClient;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`workflow ${workflowIdOf(job)} did not end within ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      try {
        await Promise.race([client.workflow.getHandle(workflowIdOf(job)).result(), timeout]);
      } finally {
        clearTimeout(timer);
      }
      return;
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = await this.db.selectFrom('jobs').select('status').where('id', '=', job.id).executeTakeFirst();
      if (row && (row.status === 'completed' || row.status === 'failed')) return;
      if (Date.now() > deadline)
        throw new Error(`job ${workflowIdOf(job)} did not end within ${timeoutMs} ms (status ${row?.status})`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  get db() {
    return this.runtime.deps.db;
  }

  async request<T = any>(
    method: string,
    urlPath: string,
    options: { body?: unknown; rawBody?: string; key?: string; headers?: Record<string, string> } = {},
  ): Promise<ApiReply<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers['x-auth-token'] = options.key;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const reply = await fetch(this.baseUrl + urlPath, { method, headers, body });
    const text = await reply.text();
    let parsed: unknown = text;
    if ((reply.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: reply.status, body: parsed as T, headers: reply.headers };
  }

  admin<T = any>(method: string, urlPath: string, body?: unknown): Promise<ApiReply<T>> {
    return this.request<T>(method, urlPath, { body, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  }

  /** A new account with a balance (kopecks) and one API key. */
  async createAccount(options: { balance?: number; mcpEnabled?: boolean; name?: string } = {}) {
    const account = await this.admin('POST', '/admin/accounts', {
      name: options.name ?? 'test',
      balance: options.balance ?? 1_000_000,
      mcp_enabled: options.mcpEnabled ?? false,
    });
    if (account.status !== 201) throw new Error(`account create failed: ${JSON.stringify(account.body)}`);
    const key = await this.admin('POST', `/admin/accounts/${account.body.id}/keys`, {});
    if (key.status !== 201) throw new Error(`key create failed: ${JSON.stringify(key.body)}`);
    return { accountId: account.body.id as string, key: key.body.key as string, keyId: key.body.id as string };
  }

  /** Cuts every open connection (a network drop as clients see it); the server keeps listening. */
  dropConnections(): void {
    this.server.closeAllConnections();
  }

  /** Stops the server and the runtime; keeps the database (for restart tests) unless `drop` is true. */
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (this.temporalWorker) await this.temporalWorker.stop();
    if (this.temporalClient) await (await this.temporalClient).connection.close();
    await this.runtime.close();
  }

  async close(): Promise<void> {
    await this.stop();
    if (this.ownsSchema && postgresUrl && this.schema) await dropSchema(this.schema);
  }
}

/** A new, empty Postgres schema (TEST_DATABASE_URL's database), named `t_<random>`; drop it with dropSchema. */
export async function createSchema(): Promise<string> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  return schema;
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  await client.query(`drop schema if exists ${schema} cascade`);
  await client.end();
}

/** What useTestApp gives a describe block: its app and its account's first key. Filled in by beforeAll. */
export interface TestSuite {
  readonly app: TestApp;
  readonly key: string;
  readonly accountId: string;
  readonly keyId: string;
}

/**
 * Starts one app and one account for the suite (beforeAll) and closes the app (afterAll): call it in a
 * describe block, before that block's own hooks, and read the fields inside tests and hooks (they throw
 * before beforeAll has run). `balance` is the account's (kopecks, createAccount's default otherwise).
 */
export function useTestApp(options: { balance?: number; app?: TestAppOptions } = {}): TestSuite {
  let app: TestApp | undefined;
  let account: { key: string; accountId: string; keyId: string } | undefined;
  beforeAll(async () => {
    app = await TestApp.start(options.app);
    account = await app.createAccount({ balance: options.balance });
  });
  afterAll(() => app?.close());
  const started = () => {
    if (!app || !account)
      throw new Error('useTestApp: the suite has not started; read its fields inside a test or a hook');
    return { app, ...account };
  };
  return {
    get app() {
      return started().app;
    },
    get key() {
      return started().key;
    },
    get accountId() {
      return started().accountId;
    },
    get keyId() {
      return started().keyId;
    },
  };
}
