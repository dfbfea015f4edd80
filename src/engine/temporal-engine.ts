import { Client, Connection, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { sql } from 'kysely';
import type { Db } from '../db/database';
import type { Logger } from '../logger';
import type { Engine, JobRef } from './engine';
import { workflowIdOf } from './job-kind';
import { jobKinds } from './job-kinds';
import { missingSearchAttributes, searchAttributesOf } from './search-attributes';
import { temporal } from '@temporalio/proto';

export interface TemporalEngineOptions {
  db: Db;
  logger: Logger;
  address: string;
  namespace: string;
  taskQueue: string;
  sweepIntervalMs?: number;
}

/**
 * Starts one Temporal workflow per job, of the type and with the input its kind declares (job-kinds.ts):
 * workflow id = kind and resource id (workflowIdOf), USE_EXISTING for a running one and
 * REJECT_DUPLICATE for a closed one, so a repeated launch is a no-op. The jobs row is the outbox: a sweeper
 * launches rows a crash left unlaunched. Postgres, not Temporal, remains the long-term record.
 */
export async function createTemporalEngine(options: TemporalEngineOptions): Promise<Engine> {
  const { db, logger } = options;
  const connection = await Connection.connect({ address: options.address });
  const client = new Client({ connection, namespace: options.namespace });
  let sweeper: NodeJS.Timeout | undefined;
  const searchable = await registerSearchAttributes(connection, options.namespace, logger);

  async function launch(job: JobRef): Promise<void> {
    try {
      const kind = jobKinds[job.kind];
      // One read per launch: the account, model and vendor the operator filters by (and the memo).
      const labels = searchable ? await kind.labels(db, job.id) : undefined;
      await client.workflow.start(kind.workflowType, {
        workflowId: workflowIdOf(job),
        taskQueue: options.taskQueue,
        args: [kind.input(job.id)],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        ...(labels ? searchAttributesOf(job, labels) : {}),
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    await db.updateTable('jobs').set({ launched_at: sql`now()`, status: 'running', updated_at: sql`now()` }).where('id', '=', job.id).execute();
  }

  /**
   * A workflow that is gone (finished and past retention) has nothing left to signal. Nothing of a signal can be
   * written in a database transaction (`within`): the caller's call after the commit delivers it, and a Run whose
   * delivery was lost reads the stored outputs at its deadline.
   */
  async function signal(job: JobRef, name: string, options?: { within?: unknown }): Promise<void> {
    if (options?.within) return;
    try {
      await client.workflow.getHandle(workflowIdOf(job)).signal(name);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }

  async function sweep() {
    const stale = await db
      .selectFrom('jobs')
      .select(['id', 'kind'])
      .where('launched_at', 'is', null)
      .where('created_at', '<', sql<Date>`now() - interval '5 seconds'`)
      .limit(100)
      .execute();
    for (const job of stale) await launch(job).catch((error) => logger.warn({ err: error, jobId: job.id }, 'sweeper launch failed'));
  }

  return {
    name: 'temporal',
    launch,
    cancel: (job) => signal(job, 'cancel'),
    signal,
    async start() {
      sweeper = setInterval(() => void sweep().catch((error) => logger.warn({ err: error }, 'sweep failed')), options.sweepIntervalMs ?? 5000);
    },
    async stop() {
      clearInterval(sweeper);
      await connection.close();
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
    const types = { KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, BOOL: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL };
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(Object.entries(missing).map(([name, type]) => [name, types[type]])),
    });
    logger.info({ namespace, registered: Object.keys(missing) }, 'temporal search attributes registered');
    return true;
  } catch (error) {
    logger.warn({ err: error, namespace, attributes: Object.keys(missingSearchAttributes({})) }, 'temporal search attributes not registered: workflows start without them');
    return false;
  }
}

/** The worker process (`npm run worker`): runs the workflow bundle and the activities. */
export async function runTemporalWorker(options: { address: string; namespace: string; taskQueue: string; activities: object; logger: Logger }) {
  const { NativeConnection, Worker } = await import('@temporalio/worker');
  const connection = await NativeConnection.connect({ address: options.address });
  const worker = await Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowsPath: require.resolve('../../workflows'),
    activities: options.activities,
    // Cancellation reaches an activity only with a heartbeat response; the default throttle (80 % of the
    // 20 s heartbeat timeout) would delay a cancel by up to 16 s.
    maxHeartbeatThrottleInterval: '2 seconds',
  });
  options.logger.info({ taskQueue: options.taskQueue }, 'temporal worker running');
  return { worker, run: () => worker.run(), shutdown: () => worker.shutdown(), connection };
}
