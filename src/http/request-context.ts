import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics/metrics';
import type { Lifecycle } from './lifecycle';

declare module 'koa' {
  interface DefaultContext {
    /** The runtime's metrics (app.context), for what records them deep in a request (SSE streams). */
    metrics?: Metrics;
    /** The process's drain and hand-over (app.context): SSE streams end at hand-over. */
    lifecycle?: Lifecycle;
  }
}

/**
 * Assigns a request id (or keeps a well-formed incoming X-Request-Id), echoes it, and after the reply (the end
 * of the stream, for SSE) writes one log line at info and one observation of the request histogram. The line
 * has the route template (never the raw path: it may carry ids), the status, the duration, the account and,
 * where there is one, the Response id; never a key or a body.
 */
export function requestContext(logger: Logger, metrics: Metrics) {
  return async function withRequestId(ctx: Context, next: Next) {
    const incoming = ctx.get('x-request-id');
    const requestId = /^[\w.-]{1,128}$/.test(incoming) ? incoming : `req_${randomUUID().replace(/-/g, '')}`;
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // A 404 of no route has no template: one label value for every unrouted path.
      const route: string = ctx._matchedRoute ? String(ctx._matchedRoute) : 'unmatched';
      // After the error middleware: its status is the one sent (a stream that started is a 200 whatever came after).
      const status = ctx.res.headersSent ? ctx.res.statusCode : ctx.status;
      metrics.httpRequestDuration.observe({ method: ctx.method, route, status }, seconds);
      const level = status >= 500 ? 'warn' : 'info';
      if (logger.isLevelEnabled(level)) {
        logger[level](
          {
            requestId,
            method: ctx.method,
            route,
            status,
            ms: Math.round(seconds * 1e6) / 1e3,
            accountId: ctx.state.auth?.accountId,
            responseId: ctx.state.responseId,
            // A stream that did not end with its source: `client` (the client went away) or `shutdown` (handed over).
            ...(ctx.state.streamCut ? { streamCut: ctx.state.streamCut } : {}),
          },
          'request',
        );
      }
    }
  };
}
