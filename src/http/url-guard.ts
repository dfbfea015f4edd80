import type { Context, Next } from 'koa';
import { invalidRequest } from '../errors';

/**
 * Postgres cannot hold U+0000 in text, so a `%00` in a path segment or query value would reach a
 * WHERE clause as an id or cursor and fail there as a 500. It is never part of a valid id, code or
 * cursor: refuse it up front as a 400, for every route (public, admin and any added later).
 */
export function rejectNulInUrl() {
  return async function guardUrl(ctx: Context, next: Next) {
    if (/%00/i.test(ctx.originalUrl)) {
      throw invalidRequest('request', 'The URL must not contain NUL (%00) characters.');
    }
    return next();
  };
}
