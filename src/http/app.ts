import Router from '@koa/router';
import { methodNotAllowed } from './method-not-allowed';
import Koa from 'koa';
import type { AccountsService } from '../accounts/accounts.service';
import { adminRoutes } from '../admin/admin.routes';
import type { Ledger } from '../billing/ledger';
import type { Config } from '../config';
import type { DatabaseHandle } from '../db/database';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics/metrics';
import { metricsRoutes } from '../metrics/metrics.routes';
import { consoleRoutes } from '../console/console.routes';
import { docsRoutes } from '../openapi/docs.routes';
import { requireAdminToken, requireApiKey } from './auth';
import type { AccountLimitsService } from '../limits/account-limits';
import { closeIfBodyUnread, jsonBody } from './body';
import { errorMiddleware } from './error-middleware';
import { requestContext } from './request-context';
import { rejectNulInUrl } from './url-guard';
import type { RouteAdmin } from '../catalog/route-admin';
import type { Lifecycle } from './lifecycle';
import { publicRouteModules, type PublicRoutesDeps } from './routes';

/** What the HTTP app needs: the public routes' slices, and what health, auth and admin use. */
export type AppDeps = PublicRoutesDeps & {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  database: DatabaseHandle;
  adminToken: string;
  accounts: AccountsService;
  ledger: Ledger;
  limits: AccountLimitsService;
  /** Operators' routes, changed at run time (api-decisions 34). */
  routeAdmin: RouteAdmin;
  /** Draining and hand-over at shutdown (readiness, open streams). */
  lifecycle: Lifecycle;
};

/** The public API's paths (behind an API key) and the operators' (behind the admin token). */
const API_PATH = /^\/(v[12]|openai\/v1)(\/|$)/;
const ADMIN_PATH = /^\/admin(\/|$)/;

/**
 * The Koa app: request ids, the error envelope, then who is asking (from the headers alone), per-account limits,
 * the body, and the routes: health, docs, console, metrics, admin and the public API.
 */
export function createApp(deps: AppDeps): Koa {
  const app = baseApp(deps);
  app.use(rejectNulInUrl());

  // Who is asking is settled from the headers before a byte of the body is read: a request without a valid key
  // gets its 401 (or 429 when its account is over a limit) without the service reading, parsing or waiting for
  // its body. Only these two areas take bodies; anywhere else one is never read (closeIfBodyUnread).
  const authenticate = requireApiKey(deps.accounts, deps.adminToken);
  const authenticateAdmin = requireAdminToken(deps.adminToken);
  const readBody = jsonBody(deps.config.http.bodyLimitBytes);
  app.use(async (ctx, next) => {
    if (API_PATH.test(ctx.path)) {
      await authenticate(ctx, async () => {
        // Per-account limits, after authentication (an unauthenticated request never reaches them).
        await deps.limits.enforce(ctx, () => readBody(ctx, next));
      });
    } else if (ADMIN_PATH.test(ctx.path)) {
      await authenticateAdmin(ctx, () => readBody(ctx, next));
    } else {
      await next();
    }
  });

  app.use(operationsRoutes(deps).routes());
  app.use(docsRoutes({ version: deps.config.version }).routes());
  app.use(consoleRoutes().routes());

  const admin = adminRoutes({
    accounts: deps.accounts,
    ledger: deps.ledger,
    adminToken: deps.adminToken,
    db: deps.db,
    routes: deps.routeAdmin,
  });
  const routers = publicRouteModules.map((module) => module(deps));
  app.use(methodNotAllowed([admin, ...routers]));
  app.use(admin.routes()).use(admin.allowedMethods({ throw: true }));

  const api = new Router();
  for (const router of routers) api.use(router.routes(), router.allowedMethods({ throw: true }));
  app.use(api.routes());
  return app;
}

/**
 * The operators' listener (OPS_PORT), beside the API's: health, readiness and metrics only. libuv accepts one new
 * connection per listener per turn of the event loop, and under load a turn can take tens of milliseconds, so a
 * burst of a few hundred new API connections queues the next ones for seconds, a load balancer's health check among
 * them. On a listener of its own the check is accepted within one turn, whatever crowds the API's.
 */
export function createOperationsApp(
  deps: Pick<AppDeps, 'config' | 'logger' | 'metrics' | 'database' | 'db' | 'adminToken' | 'lifecycle'>,
): Koa {
  const app = baseApp(deps);
  app.use(operationsRoutes(deps).routes());
  return app;
}

/** What every listener's app starts with: request ids and logs, an unread body never read, the error envelope. */
function baseApp(deps: Pick<AppDeps, 'logger' | 'metrics' | 'lifecycle'>): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.context.metrics = deps.metrics;
  app.context.lifecycle = deps.lifecycle;
  app.use(requestContext(deps.logger, deps.metrics));
  app.use(closeIfBodyUnread);
  app.use(errorMiddleware(deps.logger));
  return app;
}

/** GET /healthz (the process answers), /readyz (it takes traffic: not draining, its database reachable), /metrics. */
function operationsRoutes(
  deps: Pick<AppDeps, 'config' | 'metrics' | 'database' | 'db' | 'adminToken' | 'lifecycle'>,
): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    if (deps.lifecycle.draining) {
      ctx.status = 503;
      ctx.body = {
        error: { code: 'request.draining', message: 'This process is shutting down; send requests to another one.' },
      };
      return;
    }
    try {
      await deps.database.ping();
      ctx.body = { status: 'ready' };
    } catch {
      ctx.status = 503;
      ctx.body = { error: { code: 'request.not_ready', message: 'The database is not reachable.' } };
    }
  });
  router.use(
    metricsRoutes({ metrics: deps.metrics, db: deps.db, tokens: [deps.adminToken, deps.config.metricsToken] }).routes(),
  );
  return router;
}
