import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../logger';

/** Assigns a request id (or keeps a sane incoming X-Request-Id), echoes it, and logs one line per request. */
export function requestContext(logger: Logger) {
  return async function withRequestId(ctx: Context, next: Next) {
    const incoming = ctx.get('x-request-id');
    const requestId = /^[\w.-]{1,128}$/.test(incoming) ? incoming : `req_${randomUUID().replace(/-/g, '')}`;
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      if (logger.isLevelEnabled('debug') || ctx.status >= 500) {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        logger[ctx.status >= 500 ? 'warn' : 'debug']({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
      }
    }
  };
}
