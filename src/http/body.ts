import type { Context, Next } from 'koa';
import { ApiError, invalidRequest } from '../errors';
import { inspectedBody, MAX_JSON_DEPTH, nestsDeeperThan, refusedBody } from './json-limits';

/**
 * Reads a JSON body with a hard size limit. Over the limit is 413, a body that is not `application/json` 415,
 * bad syntax 400; all in the envelope.
 * A body nested deeper than MAX_JSON_DEPTH is not parsed and is marked refused, and one that may hold strings
 * Postgres cannot store is marked for a check (json-limits.ts): the route's parseInput answers either with a
 * 400 in the route's area.
 * Multipart bodies are left to the route that accepts them.
 */
export function jsonBody(limitBytes: number) {
  return async function readJsonBody(ctx: Context, next: Next) {
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) || ctx.is('multipart/form-data')) return next();
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limitBytes) throw tooLarge(limitBytes);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req) {
      size += (chunk as Buffer).length;
      if (size > limitBytes) throw tooLarge(limitBytes);
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (text.trim() === '') {
      ctx.request.body = undefined;
    } else if (!ctx.is('application/json', '+json')) {
      // api-decisions 27: a body is JSON only when it says so (no content type, text/plain and forms are refused).
      throw new ApiError(
        415,
        'request.unsupported_media_type',
        `The request body must be application/json (Content-Type: ${ctx.get('content-type') || 'none'}).`,
      );
    } else {
      if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
        ctx.request.body = refusedBody(
          `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`,
        );
        return next();
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw invalidRequest('request', 'The request body is not valid JSON.', 'invalid_json');
      }
      ctx.request.body = inspectedBody(text, body);
    }
    return next();
  };
}

/**
 * A reply sent before its request's body has all arrived (a 401 answered from the headers, a 404, a 413) closes
 * the connection: kept alive, Node would go on reading, and discarding, the rest of a body nobody will use, for
 * as long as the client cares to trickle it.
 */
export async function closeIfBodyUnread(ctx: Context, next: Next) {
  try {
    await next();
  } finally {
    if (!ctx.req.complete && !ctx.headerSent) ctx.set('Connection', 'close');
  }
}

const tooLarge = (limit: number) =>
  new ApiError(413, 'request.too_large', `The request body exceeds the limit of ${limit} bytes.`);

declare module 'koa' {
  interface Request {
    body?: unknown;
  }
}
