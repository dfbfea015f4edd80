import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { projectRoot } from './paths';

/**
 * The only reader of process.env. Everything else receives a slice of the frozen Config.
 * A bad value stops start-up with a message naming the variable.
 */
const booleanString = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const environmentSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  OPS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  OPS_HOST: z.string().min(1).optional(),
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(20_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(300_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  HTTP_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(15_000),
  HTTP_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  HTTP_BODY_GRACE_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  HTTP_BODY_MIN_BYTES_PER_SECOND: z.coerce.number().int().min(0).max(1_000_000_000).default(8_192),
  HTTP_SEND_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  HTTP_REPLY_BUILD_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .max(64 * 1024 * 1024 * 1024)
    .default(64 * 1024 * 1024),
  HTTP_REPLY_BUILD_BYTES_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .max(64 * 1024 * 1024 * 1024)
    .default(32 * 1024 * 1024),
  HTTP_MAX_UNSENT_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .max(64 * 1024 * 1024 * 1024)
    .default(64 * 1024 * 1024),
  DATA_DIR: z.string().min(1).default('./.data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(20),
  DATABASE_PREPARED_STATEMENTS: booleanString.default(true),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  KEY_SIGNING_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  KEY_ISSUER: z.string().min(1).default('switchyard'),
  AUTH_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  CATALOG_PATH: z.string().min(1).optional(),
  STARTER_BALANCE: z.coerce.number().int().min(0).default(100_000),
  OUTBOUND_ALLOW_PRIVATE_NETWORKS: booleanString.default(false),
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('switchyard'),
  WORKER_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  ENGINE_CONCURRENCY: z.coerce.number().int().min(1).max(100_000).default(256),
  ENGINE_CONCURRENCY_PER_ACCOUNT: z.coerce.number().int().min(1).max(100_000).optional(),
  ENGINE_LEASE_MS: z.coerce.number().int().min(1000).max(600_000).default(30_000),
  PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).default(600_000),
  PROVIDER_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  ROUTE_CIRCUIT_FAILURES: z.coerce.number().int().min(1).max(1000).default(3),
  ROUTE_CIRCUIT_COOL_DOWN_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  RUN_REQUIRES_ACTION_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .max(24 * 3_600_000)
    .default(600_000),
  MCP_TOOL_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  MCP_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  MCP_MAX_LISTING_BYTES: z.coerce
    .number()
    .int()
    .min(256)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  PROVIDER_MAX_STREAM_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024 * 1024)
    .default(64 * 1024 * 1024),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(100_000).default(64),
  WEBHOOK_CONCURRENCY_PER_ACCOUNT: z.coerce.number().int().min(1).max(100_000).default(4),
  WEBHOOK_LEFT_OVER_AFTER_MS: z.coerce.number().int().min(100).max(86_400_000).default(60_000),
  WEBHOOK_SECRET_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  // Per-account limits for accounts without their own (api-decisions 26); 0: no limit.
  LIMIT_REQUESTS_PER_MINUTE: z.coerce.number().int().min(0).max(10_000_000).default(0),
  LIMIT_TOKENS_PER_MINUTE: z.coerce.number().int().min(0).max(2_000_000_000).default(0),
  LIMIT_CONCURRENT_JOBS: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export type LogLevel = z.infer<typeof environmentSchema>['LOG_LEVEL'];

/** Per-account limits; 0 is no limit. */
export interface AccountLimits {
  readonly requestsPerMinute: number;
  readonly tokensPerMinute: number;
  readonly concurrentJobs: number;
}

export interface Config {
  readonly http: {
    readonly port: number;
    readonly host: string;
    /**
     * The operators' listener (health, readiness, metrics), when OPS_PORT is set: a load balancer's checks on new
     * connections are accepted there within one turn of the event loop however many new API connections queue.
     */
    readonly operations?: { readonly port: number; readonly host: string };
    readonly bodyLimitBytes: number;
    /** Connections (src/http/server.ts): how long a request may take to send its headers, and its whole body. */
    readonly headersTimeoutMs: number;
    readonly requestTimeoutMs: number;
    /** How long a keep-alive connection waits for its next request. */
    readonly keepAliveTimeoutMs: number;
    /** How long a connection with no request in flight (one that never sent one, say) is kept. */
    readonly idleTimeoutMs: number;
    /** Open connections at most; beyond, the longest-idle one is closed for the new one. */
    readonly maxConnections: number;
    /** A request body must arrive at bodyMinBytesPerSecond once bodyGraceMs has passed (src/http/server.ts). */
    readonly bodyGraceMs: number;
    readonly bodyMinBytesPerSecond: number;
    /** A reply the client does not read for this long is given up, and its connection closed. */
    readonly sendTimeoutMs: number;
    /** Replies waiting for clients that do not read, in all: beyond, the largest stalled ones are given up. */
    readonly maxUnsentBytes: number;
    /** Large replies (pages of items) being built at once, in bytes of their worst case (src/http/reply-budget.ts). */
    readonly replyBuildBytes: number;
    /** Of which one account's requests may hold at most this much (api-decisions 36). */
    readonly replyBuildBytesPerAccount: number;
  };
  readonly dataDir: string;
  readonly database: {
    readonly url?: string;
    readonly poolSize: number;
    /** Postgres: run parameterised queries as named prepared statements (off behind a transaction-pooling proxy). */
    readonly preparedStatements: boolean;
    readonly dataDir: string;
  };
  readonly auth: {
    readonly signingSecret?: string;
    readonly issuer: string;
    readonly dataDir: string;
    /** How long a process reuses a key row it read (0: read it on every request); see accounts.service. */
    readonly cacheMs: number;
  };
  readonly admin: { readonly token?: string; readonly dataDir: string; readonly starterBalance: number };
  /** The package's version (package.json), shown in the OpenAPI document. */
  readonly version: string;
  readonly logLevel: LogLevel;
  /** `json` (one object per line, the default) or `pretty` (for people, at a terminal). */
  readonly logFormat: 'json' | 'pretty';
  /** GET /metrics accepts this bearer token as well as the admin token. */
  readonly metricsToken?: string;
  readonly catalogPath: string;
  /** SIGTERM: how long running jobs and open streams go on (readiness draining) before what remains is handed over. */
  readonly shutdownGraceMs: number;
  readonly outbound: { readonly allowPrivateNetworks: boolean };
  readonly engine: {
    readonly temporal?: {
      readonly address: string;
      readonly namespace: string;
      readonly taskQueue: string;
      /** A Temporal worker asked to stop lets its running activities go on for this long, then cancels them. */
      readonly shutdownGraceMs: number;
    };
    readonly concurrency: number;
    /** Embedded engine: jobs of one account run at once, at most (api-decisions 36; every slot by default). */
    readonly perAccountConcurrency: number;
    /** How long a crashed process's embedded jobs stay claimed before another process resumes them. */
    readonly leaseMs: number;
  };
  /** Legacy Runs: how long one waits in requires_action for its tool outputs before it expires. */
  readonly runs: { readonly requiresActionTimeoutMs: number };
  /**
   * Remote MCP tools: the time a listing or one tool call may take (connecting included); the bytes one reply of a
   * server may have (read as it comes, cut beyond); the bytes a listing's tools may have in all (they go into prompts).
   */
  readonly mcp: { readonly toolTimeoutMs: number; readonly maxResponseBytes: number; readonly maxListingBytes: number };
  /**
   * Webhooks and callbacks: one attempt, bounded by `timeoutMs`, sent by a dispatcher of their own (not in a job's
   * slot), at most `concurrency` at once and `perAccountConcurrency` of one account.
   */
  readonly webhooks: {
    readonly timeoutMs: number;
    readonly concurrency: number;
    readonly perAccountConcurrency: number;
    /**
     * On Postgres: a delivery claimed this long ago and never attempted (its process ended or was drained while it
     * waited in the queue) is sent by whichever process sweeps next, every half of this (at most every 30 s).
     */
    readonly leftOverAfterMs: number;
    /**
     * What the accounts' webhook signing secrets are sealed with in the database (api-decisions 33); unset: derived
     * from the API-key signing secret (under a label of its own), so replicas that share keys share this too.
     */
    readonly secretKey?: string;
  };
  /** Default per-account limits (0: none); an account's own, set by an operator, replace them. */
  readonly limits: AccountLimits;
  readonly providers: {
    readonly timeoutMs: number;
    readonly maxRetries: number;
    /** Bytes one vendor reply (a whole event stream included) may have; read as it comes, cut beyond. */
    readonly maxStreamBytes: number;
    /** Vendor credentials and endpoints: every *_API_KEY and *_BASE_URL variable. Never logged. */
    readonly settings: Readonly<Record<string, string>>;
    /** Routes' circuit per vendor (routing/circuits.ts): consecutive failures that open it, and how long it stays open. */
    readonly circuit: { readonly failuresToOpen: number; readonly coolDownMs: number };
  };
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const known = Object.fromEntries(
    Object.keys(environmentSchema.shape)
      .filter((key) => env[key] !== undefined && env[key] !== '')
      .map((key) => [key, env[key]]),
  );
  const parsed = environmentSchema.safeParse(known);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  }
  const value = parsed.data;
  const dataDir = path.resolve(value.DATA_DIR);
  const settings: Record<string, string> = {};
  for (const [key, raw] of Object.entries(env)) {
    if (raw && /_(API_KEY|BASE_URL)$/.test(key)) settings[key] = raw;
  }
  const config: Config = {
    http: {
      port: value.PORT,
      host: value.HOST,
      operations:
        value.OPS_PORT === undefined ? undefined : { port: value.OPS_PORT, host: value.OPS_HOST ?? value.HOST },
      bodyLimitBytes: 10 * 1024 * 1024,
      headersTimeoutMs: value.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: value.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: value.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      idleTimeoutMs: value.HTTP_IDLE_TIMEOUT_MS,
      maxConnections: value.HTTP_MAX_CONNECTIONS,
      bodyGraceMs: value.HTTP_BODY_GRACE_MS,
      bodyMinBytesPerSecond: value.HTTP_BODY_MIN_BYTES_PER_SECOND,
      sendTimeoutMs: value.HTTP_SEND_TIMEOUT_MS,
      maxUnsentBytes: value.HTTP_MAX_UNSENT_BYTES,
      replyBuildBytes: value.HTTP_REPLY_BUILD_BYTES,
      replyBuildBytesPerAccount: Math.min(value.HTTP_REPLY_BUILD_BYTES_PER_ACCOUNT, value.HTTP_REPLY_BUILD_BYTES),
    },
    dataDir,
    database: {
      url: value.DATABASE_URL,
      poolSize: value.DATABASE_POOL_SIZE,
      preparedStatements: value.DATABASE_PREPARED_STATEMENTS,
      dataDir,
    },
    auth: { signingSecret: value.KEY_SIGNING_SECRET, issuer: value.KEY_ISSUER, dataDir, cacheMs: value.AUTH_CACHE_MS },
    admin: { token: value.ADMIN_TOKEN, dataDir, starterBalance: value.STARTER_BALANCE },
    version: (JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string })
      .version,
    logLevel: value.LOG_LEVEL,
    logFormat: value.LOG_FORMAT,
    metricsToken: value.METRICS_TOKEN,
    catalogPath: path.resolve(value.CATALOG_PATH ?? path.join(projectRoot, 'catalog.yaml')),
    shutdownGraceMs: value.SHUTDOWN_GRACE_MS,
    outbound: { allowPrivateNetworks: value.OUTBOUND_ALLOW_PRIVATE_NETWORKS },
    engine: {
      temporal: value.TEMPORAL_ADDRESS
        ? {
            address: value.TEMPORAL_ADDRESS,
            namespace: value.TEMPORAL_NAMESPACE,
            taskQueue: value.TEMPORAL_TASK_QUEUE,
            shutdownGraceMs: value.WORKER_SHUTDOWN_GRACE_MS,
          }
        : undefined,
      concurrency: value.ENGINE_CONCURRENCY,
      perAccountConcurrency: Math.min(
        value.ENGINE_CONCURRENCY_PER_ACCOUNT ?? value.ENGINE_CONCURRENCY,
        value.ENGINE_CONCURRENCY,
      ),
      leaseMs: value.ENGINE_LEASE_MS,
    },
    runs: { requiresActionTimeoutMs: value.RUN_REQUIRES_ACTION_TIMEOUT_MS },
    mcp: {
      toolTimeoutMs: value.MCP_TOOL_TIMEOUT_MS,
      maxResponseBytes: value.MCP_MAX_RESPONSE_BYTES,
      maxListingBytes: value.MCP_MAX_LISTING_BYTES,
    },
    webhooks: {
      timeoutMs: value.WEBHOOK_TIMEOUT_MS,
      concurrency: value.WEBHOOK_CONCURRENCY,
      perAccountConcurrency: value.WEBHOOK_CONCURRENCY_PER_ACCOUNT,
      leftOverAfterMs: value.WEBHOOK_LEFT_OVER_AFTER_MS,
      secretKey: value.WEBHOOK_SECRET_KEY,
    },
    limits: {
      requestsPerMinute: value.LIMIT_REQUESTS_PER_MINUTE,
      tokensPerMinute: value.LIMIT_TOKENS_PER_MINUTE,
      concurrentJobs: value.LIMIT_CONCURRENT_JOBS,
    },
    providers: {
      timeoutMs: value.PROVIDER_TIMEOUT_MS,
      maxRetries: value.PROVIDER_MAX_RETRIES,
      maxStreamBytes: value.PROVIDER_MAX_STREAM_BYTES,
      settings: Object.freeze(settings),
      circuit: { failuresToOpen: value.ROUTE_CIRCUIT_FAILURES, coolDownMs: value.ROUTE_CIRCUIT_COOL_DOWN_MS },
    },
  };
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
