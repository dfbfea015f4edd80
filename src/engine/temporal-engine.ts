import fs from 'node:fs';
import path from 'node:path';
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type ConnectionLike,
} from '@temporalio/client';
import { sql } from 'kysely';
import type { Db } from '../db/database';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics/metrics';
import { admitJob } from './admission';
import type { Engine, JobRef } from './engine';
import { workflowIdOf } from './job-kind';
import { jobKindOf, jobKinds } from './job-kinds';
import { missingSearchAttributes, searchAttributesOf } from './search-attributes';
import { temporal } from '@temporalio/proto';
import { bookkeepingTaskQueue, cancelSignal, type WakeSignal } from '../../workflows/definitions';

export interface TemporalEngineOptions {
  db: Db;
  logger: Logger;
  metrics?: Pick<Metrics, 'temporalStarts'>;
  address: string;
  namespace: string;
  taskQueue: string;
  sweepIntervalMs?: number;
}

/** The Temporal engine: an Engine that can also start its workflows eagerly on a worker of its own process. */
export interface TemporalEngine extends Engine {
  readonly name: 'temporal';
  /**
   * A worker of this process polls the engine's task queue on `connection` (its NativeConnection): from now on the
   * engine starts workflows through it with eager start, so the server hands a start's first workflow task back in
   * the start's answer and this worker runs it at once, instead of the task going through matching to whichever
   * worker polls next. The SDK's core asks for it only while that worker has a free workflow-task slot (it reserves
   * the slot first) and the server may decline; either way the workflow starts as before. Nothing else changes: the
   * workflow id is still the idempotency key, and the Response stays `queued` until its start activity gets a slot.
   * Answers the detach, to call before the worker stops: starts go back to the engine's own connection, once the
   * ones under way on the worker's have answered (so closing it fails none).
   */
  startEagerlyOn(connection: ConnectionLike): () => Promise<void>;
}

/** The runtime's engine is the Temporal engine (it is when TEMPORAL_ADDRESS is set). */
export function isTemporalEngine(engine: Engine): engine is TemporalEngine {
  return engine.name === 'temporal' && 'startEagerlyOn' in engine;
}

/**
 * Starts one Temporal workflow per job, of the type and with the input its kind declares (job-kinds.ts):
 * workflow id = kind and resource id (workflowIdOf), USE_EXISTING for a running one and
 * REJECT_DUPLICATE for a closed one, so a repeated launch is a no-op. The jobs row is the outbox: a sweeper
 * launches rows a crash left unlaunched. Postgres, not Temporal, remains the long-term record.
 */
export async function createTemporalEngine(options: TemporalEngineOptions): Promise<TemporalEngine> {
  const { db, logger } = options;
  const connection = await connectOrExplain(
    () => Connection.connect({ address: options.address, connectTimeout: CONNECT_TIMEOUT }),
    options,
  );
  const client = new Client({ connection, namespace: options.namespace });
  await requireNamespace(connection, options).catch(async (error) => {
    await connection.close();
    throw error;
  });
  let sweeper: NodeJS.Timeout | undefined;
  let closed = false;
  const searchable = await registerSearchAttributes(connection, options.namespace, logger);
  // The client on a local worker's connection (startEagerlyOn), and the starts under way on it.
  let eager: { client: Client; starts: Set<Promise<unknown>> } | undefined;

  async function launch(job: JobRef): Promise<void> {
    try {
      const kind = jobKindOf(job.kind);
      // One read per launch: the account, model and vendor the operator filters by (and the memo).
      const labels = searchable ? await kind.labels(db, job.id) : undefined;
      const on = eager;
      const starting = (on?.client ?? client).workflow.start(kind.flow.workflowType, {
        workflowId: workflowIdOf(job),
        taskQueue: options.taskQueue,
        args: [kind.flow.input(job.id)],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        requestEagerStart: on !== undefined,
        ...(labels ? searchAttributesOf(job, labels) : {}),
      });
      if (on) {
        const settled = starting.then(
          () => undefined,
          () => undefined,
        );
        on.starts.add(settled);
        void settled.then(() => on.starts.delete(settled));
      }
      const started = await starting;
      options.metrics?.temporalStarts.inc({ eager: String(started.eagerlyStarted) });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    await db
      .updateTable('jobs')
      .set({ launched_at: sql`now()`, status: 'running', updated_at: sql`now()` })
      .where('id', '=', job.id)
      .execute();
  }

  /**
   * A workflow that is gone (finished and past retention) has nothing left to signal. Nothing of a signal can be
   * written in a database transaction (`within`): the caller's call after the commit delivers it, and a Run whose
   * delivery was lost reads the stored outputs at its deadline.
   */
  async function signal(
    job: JobRef,
    definition: WakeSignal | typeof cancelSignal,
    options?: { within?: unknown },
  ): Promise<void> {
    if (options?.within) return;
    try {
      await client.workflow.getHandle(workflowIdOf(job)).signal(definition);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }

  /**
   * Launches the rows a crash left unlaunched. A row younger than 5 s is normally being launched by the process that
   * wrote it, so it waits; at start (`everyAge`), rows of any age go at once: a process that died a moment ago left
   * young ones, and a launch is idempotent (the workflow id), so racing a live replica's launch costs one call.
   */
  async function sweep(everyAge = false) {
    await endFinishedJobs();
    let unlaunched = db.selectFrom('jobs').select(['id', 'kind']).where('launched_at', 'is', null);
    if (!everyAge) unlaunched = unlaunched.where('created_at', '<', sql<Date>`now() - interval '5 seconds'`);
    const stale = await unlaunched.limit(everyAge ? 1000 : 100).execute();
    for (const job of stale)
      await launch(job).catch((error) => logger.warn({ err: error, jobId: job.id }, 'sweeper launch failed'));
  }

  /**
   * Under Temporal a `jobs` row is the launch outbox; the workflow's own record is Temporal's. A row whose resource
   * has ended is ended too (within a sweep interval), so `switchyard_engine_jobs` counts what runs and the open-jobs
   * index holds only that.
   */
  async function endFinishedJobs() {
    for (const [kind, definition] of Object.entries(jobKinds)) {
      const { table, finalStatuses } = definition.resource;
      await sql`
        update jobs set status = 'completed', finished_at = now(), updated_at = now()
        where jobs.kind = ${kind} and jobs.status = 'running' and jobs.launched_at is not null
          and exists (select 1 from ${sql.table(table)} as resource where resource.id = jobs.id and resource.status = any(${[...finalStatuses]}::text[]))`.execute(
        db,
      );
    }
  }

  return {
    name: 'temporal',
    startEagerlyOn(workerConnection) {
      const on = {
        client: new Client({ connection: workerConnection, namespace: options.namespace }),
        starts: new Set<Promise<unknown>>(),
      };
      eager = on;
      return async () => {
        if (eager === on) eager = undefined;
        await Promise.all(on.starts);
      };
    },
    // Nothing runs in the API process: the row is written pending and its workflow started.
    admit: (job, write) => admitJob(job.kind, write, undefined, launch),
    launch,
    cancel: (job) => signal(job, cancelSignal),
    signal,
    async start() {
      // Not awaited: a backlog a crash left must not hold the API's start.
      void sweep(true).catch((error) => logger.warn({ err: error }, 'sweep at start failed'));
      sweeper = setInterval(
        () => void sweep().catch((error) => logger.warn({ err: error }, 'sweep failed')),
        options.sweepIntervalMs ?? 5000,
      );
    },
    async stop(stopOptions) {
      clearInterval(sweeper);
      // A drain (with a grace) keeps the connection: requests still answered meanwhile may start workflows. The
      // final stop (the runtime's close) closes it; a second one has nothing left to close.
      if (stopOptions?.graceMs !== undefined) return { handedOver: 0 };
      if (!closed) {
        closed = true;
        await connection.close();
      }
      return { handedOver: 0 };
    },
  };
}

/**
 * Registers the search attributes the namespace lacks (temporal-dev.yml registers them too). Answers whether
 * workflows may carry them: a server that refuses (no operator permission, as on some hosted namespaces) gets
 * workflows without them rather than workflows that fail to start; the warning says what to register.
 */
async function registerSearchAttributes(connection: Connection, namespace: string, logger: Logger): Promise<boolean> {
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = missingSearchAttributes(listed.customAttributes ?? {});
    if (Object.keys(missing).length === 0) return true;
    const types = {
      KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
      BOOL: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
    };
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(Object.entries(missing).map(([name, type]) => [name, types[type]])),
    });
    logger.info({ namespace, registered: Object.keys(missing) }, 'temporal search attributes registered');
    return true;
  } catch (error) {
    logger.warn(
      { err: error, namespace, attributes: Object.keys(missingSearchAttributes({})) },
      'temporal search attributes not registered: workflows start without them',
    );
    return false;
  }
}

/** How long start-up waits for the Temporal server before it gives up with a message naming the setting. */
const CONNECT_TIMEOUT = '5 seconds';
const CONNECT_TIMEOUT_MS = 5000;

type ServerSettings = { address: string; namespace: string };

/**
 * Connects, or fails at once with what to change: the gRPC client's own error ("14 UNAVAILABLE: No connection
 * established", after its retries) names neither the setting nor the address.
 */
async function connectOrExplain<T>(connect: () => Promise<T>, settings: ServerSettings): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
  });
  try {
    return await Promise.race([connect(), timeout]);
  } catch (error) {
    throw new TemporalUnreachable(
      `Cannot reach the Temporal server at TEMPORAL_ADDRESS=${settings.address} (${(error as Error).message}). ` +
        'Start one (`npm run temporal`), correct TEMPORAL_ADDRESS, or unset it to run on the embedded engine.',
    );
  } finally {
    clearTimeout(timer);
  }
}

/** The namespace must exist: otherwise every workflow start would fail later, one request at a time. */
async function requireNamespace(
  connection: Pick<Connection, 'workflowService'>,
  settings: ServerSettings,
): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace: settings.namespace });
  } catch (error) {
    const code = (error as { code?: number }).code;
    const detail = code === 5 ? 'it does not exist' : (error as Error).message;
    throw new TemporalUnreachable(
      `The Temporal namespace TEMPORAL_NAMESPACE=${settings.namespace} at ${settings.address} cannot be used: ${detail}. ` +
        `Create it (\`temporal operator namespace create -n ${settings.namespace}\`) or set TEMPORAL_NAMESPACE to an existing one.`,
    );
  }
}

/** Start-up against a Temporal server that cannot be used; main prints the message alone, without a stack. */
export class TemporalUnreachable extends Error {
  override readonly name = 'TemporalUnreachable';
}

let sdkLogsRouted = false;

/**
 * The SDK's own log (worker state changes, failed tasks, its core's gRPC retries) goes to our logger as JSON,
 * warnings and errors only: its default prints every state change, and its core colored text, to the console. Once per process, before the first worker (the SDK's rule).
 */
async function routeSdkLogs(logger: Logger): Promise<void> {
  if (sdkLogsRouted) return;
  sdkLogsRouted = true;
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  try {
    Runtime.install({
      // Our processes handle SIGTERM and SIGINT themselves (drain, then hand over: src/worker.ts): the SDK's own
      // handlers would stop the workers at once and leave the process running.
      shutdownSignals: [],
      // The SDK core's own log (gRPC retries while the server is away, …) is forwarded too, not printed as text.
      telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
      logger: new DefaultLogger('WARN', ({ level, message, meta }) => {
        if (level === 'ERROR') logger.error({ temporal: meta }, message);
        else logger.warn({ temporal: meta }, message);
      }),
    });
  } catch {
    // A Runtime already installed (a test process that installed its own first) keeps its logger.
  }
}

/** The workflow bundle `npm run build` writes (scripts/bundle-workflows.js), beside the compiled workflows. */
export const BUILT_WORKFLOW_BUNDLE = path.join(__dirname, '..', '..', 'workflows', 'bundle.js');

export interface TemporalWorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  activities: object;
  logger: Logger;
  /** The prebuilt workflow code (default: the bundle `npm run build` writes). */
  workflowBundlePath?: string;
  /** After shutdown is asked (SIGTERM), how long running activities may go on before they are cancelled. */
  shutdownGraceMs?: number;
  /** Activities at once on the workflows' queue: starts and generations (ENGINE_CONCURRENCY); default Temporal's 100. */
  activitySlots?: number;
}

/**
 * The worker (`npm run worker`, or inside `all` with TEMPORAL_ADDRESS): runs the prebuilt workflow bundle and the
 * activities. Loading the bundle instead of bundling at start (webpack, seconds of CPU) makes a worker start at once
 * and every worker of a deploy run the very same workflow code.
 *
 * Two Temporal workers in one: the workflows' task queue (workflow tasks, starts and generations, `activitySlots` at
 * once) and its bookkeeping queue (finalisations, webhooks, the Runs' waits; workflows/temporal-context.ts), with
 * slots of its own, so a worker whose slots all hold long generations still finalises a cancel, and sends its
 * webhook, at once.
 */
export async function runTemporalWorker(options: TemporalWorkerOptions) {
  const { NativeConnection, Worker } = await import('@temporalio/worker');
  await routeSdkLogs(options.logger);
  const codePath = options.workflowBundlePath ?? BUILT_WORKFLOW_BUNDLE;
  if (!fs.existsSync(codePath))
    throw new TemporalUnreachable(`The workflow bundle ${codePath} is missing: run \`npm run build\` first.`);
  const connection = await connectOrExplain(() => NativeConnection.connect({ address: options.address }), options);
  try {
    await requireNamespace(connection, options);
    const common = {
      connection,
      namespace: options.namespace,
      activities: options.activities,
      // Cancellation reaches an activity only with a heartbeat response; the default throttle (80 % of the
      // 10 s heartbeat timeout) would delay a cancel by up to 8 s.
      maxHeartbeatThrottleInterval: '2 seconds',
      // SIGTERM: stop polling, let running activities finish for this long, then cancel them (their heartbeats
      // stop; Temporal retries them on another worker after the heartbeat timeout).
      shutdownGraceTime: options.shutdownGraceMs ?? 0,
    } as const;
    const worker = await Worker.create({
      ...common,
      taskQueue: options.taskQueue,
      workflowBundle: { codePath },
      maxConcurrentActivityTaskExecutions: options.activitySlots,
    });
    const bookkeeping = await Worker.create({ ...common, taskQueue: bookkeepingTaskQueue(options.taskQueue) });
    options.logger.info({ taskQueue: options.taskQueue }, 'temporal worker running');
    return {
      worker,
      // Both run until shutdown; one that fails stops the other, so the process never runs half a worker.
      run: async () => {
        const runs = [worker.run(), bookkeeping.run()];
        try {
          await Promise.all(runs);
        } catch (error) {
          for (const each of [worker, bookkeeping]) if (each.getState() === 'RUNNING') each.shutdown();
          await Promise.allSettled(runs);
          throw error;
        }
      },
      // Each one still running (the other may have failed already, and a Worker not running refuses a shutdown).
      shutdown: () => {
        for (const each of [worker, bookkeeping]) if (each.getState() === 'RUNNING') each.shutdown();
      },
      connection,
    };
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw error;
  }
}
