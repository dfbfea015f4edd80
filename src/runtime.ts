import type Koa from 'koa';
import { createKeySigner } from './accounts/api-keys';
import { createAccountsService } from './accounts/accounts.service';
import { loadOrCreateSecretFile } from './accounts/secret-files';
import { createLedger } from './billing/ledger';
import { createAccountLimits } from './limits/account-limits';
import { createCatalog, type Catalog } from './catalog/catalog.service';
import { createRouteAdmin } from './catalog/route-admin';
import type { Config } from './config';
import { openDatabase, type DatabaseOptions, type Db } from './db/database';
import { migrateToLatest } from './db/migrate';
import { createApp, createOperationsApp, type AppDeps } from './http/app';
import { createLogger, type Logger } from './logger';
import { createMetrics, vendorCallObserver } from './metrics/metrics';
import { createProviderRegistry, type ProviderRegistry } from './providers/registry';
import { configureCircuits } from './routing/circuits';
import { createActivities } from './engine/job-kinds';
import { createEmbeddedEngine } from './engine/embedded-engine';
import { newOwnerName, ownerDied as ownerDiedSql } from './engine/liveness';
import { sql } from 'kysely';
import type { Engine } from './engine/engine';
import { createTemporalEngine } from './engine/temporal-engine';
import { createInProcessBus, createPostgresBus, type EventBus } from './events/event-bus';
import { createEventLog, type EventLog } from './events/event-log';
import { createResponsesService, type ResponsesService } from './responses/responses.service';
import { JobHandoff } from './engine/job-handoff';
import { createIdempotency } from './idempotency/idempotency';
import { createRunsService, type RunsService } from './threads/runs.service';
import { createAudioService, type AudioService } from './audio/audio.service';
import { createWebhookDispatcher, type WebhookDispatcher } from './webhooks/webhook-dispatcher';
import { createWebhookSender } from './webhooks/webhook-sender';
import { createSecretBox } from './webhooks/webhook-signing';
import { createWebhookSigningService, type WebhookSigningService } from './webhooks/webhook-signing.service';
import { createMcpSessionPool, type McpSessionPool } from './mcp/mcp-sessions';
import { createLifecycle } from './http/lifecycle';
import { createReplyBudget } from './http/reply-budget';

/** Everything a route, service or activity may depend on; built once per process (or per test). */
export interface RuntimeDeps extends AppDeps {
  db: Db;
  /** The model catalog (catalog.yaml), loaded and synced to the database at start. */
  catalog: Catalog;
  /** Vendor adapters by vendor code, created on first use. */
  providers: ProviderRegistry;
  /** Notifications between processes (in-process when embedded, LISTEN/NOTIFY on Postgres). */
  bus: EventBus;
  /** Stored, resumable event streams (of Responses today), keyed by stream id. */
  events: EventLog;
  webhooks: WebhookDispatcher;
  /** Accounts' opt-in Standard Webhooks signing: their sealed secrets (api-decisions 33). */
  webhookSigning: WebhookSigningService;
  /** Open sessions with remote MCP servers, reused by the MCP calls of this process. */
  mcpSessions: McpSessionPool;
  /** Runs one durable workflow per job (a Response): embedded, or Temporal when TEMPORAL_ADDRESS is set. */
  engine: Engine;
  responses: ResponsesService;
  runs: RunsService;
  audio: AudioService;
}

export interface RuntimeOptions {
  logger?: Logger;
  database?: DatabaseOptions;
}

export interface Runtime {
  deps: RuntimeDeps;
  app: Koa;
  /** Health, readiness and metrics alone, for the operators' listener (OPS_PORT). */
  operationsApp: Koa;
  /** Where a generated admin token was written, when it was generated on this start. */
  adminTokenFile?: string;
  /** This process's name as the owner of its job leases (embedded engine), its liveness lock and its billing holds. */
  owner: string;
  /** Starts processing jobs (embedded engine) or the launch sweeper (Temporal). */
  startEngine(): Promise<void>;
  /**
   * A deploy's way out: readiness turns to draining at once, no job is claimed any more, running jobs go on for
   * `graceMs`; what still runs then is handed over (open streams end cleanly, the jobs are left to the next
   * process, which resumes them). Answers how many jobs were handed over. Then `close`.
   */
  drain(graceMs: number): Promise<{ handedOver: number }>;
  close(): Promise<void>;
}

/**
 * A hold older than this is released whoever placed it: under Temporal its owner cannot be known dead, and a hold of
 * a live process this old is taken as left behind by an error path (a Run waiting longer than this for tool outputs,
 * with RUN_REQUIRES_ACTION_TIMEOUT_MS raised past it, loses its hold and is debited at its end all the same).
 */
const ABANDONED_HOLD_AGE_MS = 60 * 60_000;
/** Postgres: webhooks another process claimed this long ago and never attempted are sent by a starting one. */
const HOLD_SWEEP_INTERVAL_MS = 30_000;

export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const logger = options.logger ?? createLogger(config.logLevel, config.logFormat);
  const metrics = createMetrics();
  const database = await openDatabase(config.database, options.database);
  try {
    await migrateToLatest(database.db);
    const catalog = await createCatalog({
      path: config.catalogPath,
      settings: config.providers.settings,
      db: database.db,
    });
    const providers = createProviderRegistry({
      catalog,
      settings: config.providers,
      observer: vendorCallObserver(metrics, logger),
    });
    const circuits = configureCircuits(providers, config.providers.circuit);
    metrics.watchCircuits(() => circuits.open());
    const signingSecret =
      config.auth.signingSecret ?? loadOrCreateSecretFile(config.auth.dataDir, 'key-signing-secret').value;
    let adminTokenFile: string | undefined;
    let adminToken = config.admin.token;
    if (!adminToken) {
      const file = loadOrCreateSecretFile(config.admin.dataDir, 'admin-token');
      adminToken = file.value;
      adminTokenFile = file.path;
    }
    const db = database.db;
    // This process's name as the owner of its leases, its liveness lock and its billing holds.
    const owner = newOwnerName();
    const ledger = createLedger(db, { owner, metrics });
    const bus =
      database.kind === 'postgres' && database.postgres
        ? await createPostgresBus({ ...database.postgres, logger })
        : createInProcessBus();
    // Operators' routes (api-decisions 34): served from the start, and again whenever any process changes them.
    const routeAdmin = createRouteAdmin({ db, catalog, bus, logger, poll: database.kind === 'postgres' });
    await routeAdmin.reload();
    const accounts = createAccountsService({
      db,
      ledger,
      signer: createKeySigner(signingSecret, config.auth.issuer),
      bus,
      cacheMs: config.auth.cacheMs,
    });
    const events = createEventLog({ db, bus, metrics });
    const webhookSigning = createWebhookSigningService({
      db,
      box: createSecretBox(config.webhooks.secretKey ?? signingSecret),
    });
    const webhooks = createWebhookDispatcher({
      db,
      logger,
      deliverer: createWebhookSender({
        db,
        allowPrivateNetworks: config.outbound.allowPrivateNetworks,
        logger,
        metrics,
        timeoutMs: config.webhooks.timeoutMs,
        signing: webhookSigning,
      }),
      concurrency: config.webhooks.concurrency,
      perAccountConcurrency: config.webhooks.perAccountConcurrency,
    });
    const mcpSessions = createMcpSessionPool({
      allowPrivateNetworks: config.outbound.allowPrivateNetworks,
      ...config.mcp,
    });
    // Rows handed from a job's admission to its first step and between its steps in this process (engine/job-handoff.ts).
    const handoff = new JobHandoff();
    const activities = createActivities({
      db,
      logger,
      metrics,
      events,
      webhooks,
      catalog,
      providers,
      handoff,
      ledger,
      requiresActionTimeoutMs: config.runs.requiresActionTimeoutMs,
      mcpSessions,
    });
    const engine = config.engine.temporal
      ? await createTemporalEngine({ db, logger, metrics, ...config.engine.temporal })
      : createEmbeddedEngine({
          db,
          bus,
          logger,
          activities,
          handoff,
          concurrency: config.engine.concurrency,
          perAccountConcurrency: config.engine.perAccountConcurrency,
          leaseMs: config.engine.leaseMs,
          owner,
          metrics,
          exclusiveStorage: database.kind === 'pglite',
          liveness: database.postgres ? { connectionString: database.postgres.connectionString } : undefined,
        });
    const idempotency = createIdempotency(db);
    const responses = createResponsesService({
      db,
      idempotency,
      catalog,
      ledger,
      engine,
      events,
      metrics,
      allowPrivateNetworks: config.outbound.allowPrivateNetworks,
    });
    const runs = createRunsService({ db, catalog, ledger, engine, metrics, idempotency });
    const audio = createAudioService({
      db,
      idempotency,
      catalog,
      ledger,
      engine,
      providers,
      metrics,
      allowPrivateNetworks: config.outbound.allowPrivateNetworks,
    });
    const limits = createAccountLimits({ db, defaults: config.limits });
    const lifecycle = createLifecycle();
    const replyBudget = createReplyBudget(config.http.replyBuildBytes, config.http.replyBuildBytesPerAccount);
    const deps: RuntimeDeps = {
      config,
      logger,
      metrics,
      database,
      db,
      adminToken,
      ledger,
      accounts,
      limits,
      catalog,
      routeAdmin,
      providers,
      bus,
      events,
      webhooks,
      webhookSigning,
      mcpSessions,
      engine,
      responses,
      runs,
      idempotency,
      audio,
      lifecycle,
      replyBudget,
    };
    const app = createApp(deps);
    let holdSweep: NodeJS.Timeout | undefined;
    let webhookSweep: NodeJS.Timeout | undefined;
    return {
      deps,
      app,
      operationsApp: createOperationsApp(deps),
      adminTokenFile,
      owner,
      async startEngine() {
        await engine.start();
        // Webhooks claimed and never attempted (their process ended, or was drained, while they waited to be sent).
        // Single-process storage: at start-up, all of them (every other process is dead). Postgres: those claimed
        // long enough ago, now and then every so often, so a replica that stays down or a drained one leaves none
        // unsent until the next start.
        const leftOverAfterMs = config.webhooks.leftOverAfterMs;
        const sendLeftOver = () =>
          webhooks
            .sendLeftOver(database.kind === 'pglite' ? 0 : leftOverAfterMs)
            .catch((error) => logger.warn({ err: error }, 'sending left-over webhooks failed'));
        await sendLeftOver();
        if (database.kind !== 'pglite') {
          webhookSweep = setInterval(() => void sendLeftOver(), Math.min(30_000, Math.ceil(leftOverAfterMs / 2)));
          webhookSweep.unref();
        }
        // Holds a dead process left (one of a request it was serving; one whose job was never written) are
        // released now and every half minute. Single-process storage: every other owner is dead. Postgres with
        // the embedded engine: an owner whose liveness lock is free. Under Temporal: after an hour.
        const ownerDied =
          database.kind === 'pglite'
            ? sql<boolean>`true`
            : config.engine.temporal
              ? sql<boolean>`false`
              : ownerDiedSql('h.owner');
        const sweep = async () => {
          await ledger
            .releaseAbandoned({ ownerDied, maxAgeMs: ABANDONED_HOLD_AGE_MS })
            .catch((error) => logger.warn({ err: error }, 'releasing abandoned holds failed'));
          await limits
            .sweepWindows()
            .catch((error) => logger.warn({ err: error }, 'forgetting ended request windows failed'));
        };
        await sweep();
        holdSweep = setInterval(() => void sweep(), HOLD_SWEEP_INTERVAL_MS);
        holdSweep.unref();
      },
      async drain(graceMs) {
        lifecycle.beginDrain();
        // Running jobs and open streams go on for the grace (on Temporal no job runs here: the streams alone).
        const [{ handedOver }] = await Promise.all([engine.stop({ graceMs }), lifecycle.streamsEnded(graceMs)]);
        lifecycle.handOver();
        metrics.drains.inc({ outcome: handedOver > 0 ? 'handed_over' : 'drained' });
        logger.info(
          { graceMs, handedOver },
          handedOver > 0 ? 'drain ended: jobs handed over to the next process' : 'drained: no job left running',
        );
        return { handedOver };
      },
      async close() {
        clearInterval(holdSweep);
        clearInterval(webhookSweep);
        routeAdmin.close();
        await engine.stop();
        await webhooks.stop();
        await mcpSessions.close();
        await bus.close();
        await database.close();
      },
    };
  } catch (error) {
    await database.close().catch(() => undefined);
    throw error;
  }
}
