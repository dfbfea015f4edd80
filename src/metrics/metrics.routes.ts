import Router from '@koa/router';
import { sql } from 'kysely';
import type { Db } from '../db/database';
import { requireAdminToken } from '../http/auth';
import type { Metrics } from './metrics';

/**
 * GET /metrics: the Prometheus text format, behind the admin token or METRICS_TOKEN. The engine's queue figures
 * are read from the database at scrape (one query on the partial index of open jobs), so every replica reports
 * the same queue and a scrape costs one statement however many jobs there are.
 */
export function metricsRoutes(deps: { metrics: Metrics; db: Db; tokens: Array<string | undefined> }): Router {
  const { metrics, db } = deps;
  const router = new Router();
  router.get('/metrics', requireAdminToken(deps.tokens), async (ctx) => {
    const open = await sql<{
      kind: string;
      status: string;
      jobs: string | number;
      oldest_seconds: string | number | null;
    }>`
      select kind, status, count(*) as jobs, extract(epoch from now() - min(created_at)) as oldest_seconds
      from jobs where status in ('pending', 'running') group by kind, status`.execute(db);
    metrics.engineJobs.reset();
    let oldestPending = 0;
    for (const row of open.rows) {
      metrics.engineJobs.set({ kind: row.kind, state: row.status }, Number(row.jobs));
      if (row.status === 'pending') oldestPending = Math.max(oldestPending, Number(row.oldest_seconds ?? 0));
    }
    metrics.engineOldestPending.set(oldestPending);
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  return router;
}
