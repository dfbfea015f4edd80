import type { Context, Next } from 'koa';
import { isTransactionConflict } from '../db/conflict-retry';
import { ApiError } from '../errors';
import type { Logger } from '../logger';

/**
 * First in the chain: every error becomes `{error: {code, message}}`. Unexpected errors are a 500 whose
 * message is hidden behind the request id; the stack goes to the log only. JSON replies are serialised
 * here rather than by Koa after the chain, so one that cannot be (longer than the longest string V8 can
 * build, say) is such an error too instead of Koa's plain-text 500.
 */
export function errorMiddleware(logger: Logger) {
  return async function handleErrors(ctx: Context, next: Next) {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined && !ctx.headerSent) {
        throw new ApiError(404, 'request.not_found', `No route for ${ctx.method} ${ctx.path}.`);
      }
      if (isJsonValue(ctx.body) && !ctx.headerSent) {
        const status = ctx.status;
        // As bytes: the socket then holds the one copy it sends, and the text is garbage at once. Given the text,
        // Node copies it for the socket while the context, alive until the reply is sent, keeps the text too: a
        // client that does not read would make the process hold each of its pages twice.
        ctx.body = Buffer.from(JSON.stringify(ctx.body));
        ctx.type = 'application/json';
        ctx.status = status;
      }
    } catch (error) {
      if (ctx.headerSent || !ctx.writable) {
        // A body cut off by its client, or by the server for arriving too slowly (http/server.ts), and a client that
        // left before its reply was built (a 499) are the peer's doing: logged at debug, or a trickling or impatient
        // crowd would fill the error log.
        const cutOff = ctx.req.destroyed && !ctx.req.complete;
        const clientGone = ApiError.isInstance(error) && error.status === 499;
        logger[cutOff || clientGone ? 'debug' : 'error'](
          { err: error, requestId: ctx.state.requestId },
          'error after the response started',
        );
        return;
      }
      const apiError = toApiError(error);
      if (apiError.status >= 500) {
        logger.error(
          { err: error, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path },
          'request failed',
        );
      }
      const reply = errorReply(apiError, ctx.path);
      ctx.status = reply.status;
      if (apiError.headers) ctx.set(apiError.headers);
      ctx.body = reply.body;
    }
  };
}

/** A reply Koa would serialise as JSON (not a string, buffer or stream). */
function isJsonValue(body: unknown): boolean {
  return (
    body !== null &&
    typeof body === 'object' &&
    !Buffer.isBuffer(body) &&
    typeof (body as { pipe?: unknown }).pipe !== 'function'
  );
}

export function toApiError(error: unknown): ApiError {
  if (ApiError.isInstance(error)) return error;
  const status = (error as { status?: number; expose?: boolean })?.status;
  // Errors thrown by Koa itself (ctx.throw, http-errors) carry a safe status and message.
  if (typeof status === 'number' && status >= 400 && status < 500 && (error as { expose?: boolean }).expose) {
    const reason = status === 413 ? 'too_large' : status === 405 ? 'method_not_allowed' : 'invalid_request';
    return new ApiError(status, `request.${reason}`, (error as Error).message);
  }
  // The service retries these itself (db/conflict-retry.ts); one that outlasted every retry wrote nothing and is
  // the client's to retry later, not a failure of the request.
  if (isTransactionConflict(error)) {
    return new ApiError(
      503,
      'request.busy',
      'Concurrent requests on the same account kept conflicting; nothing was written. Retry shortly.',
      { headers: { 'Retry-After': '1' } },
    );
  }
  return new ApiError(500, 'request.execution_failed', 'The request failed unexpectedly.');
}

/**
 * An error's status and body for a request to `path`: the OpenAI-compatible surface answers with OpenAI's status and
 * error body, the rest with the spec's envelope `{error: {code, message}}`. The one place both are chosen: the
 * middleware above, and the HTTP server's own answers (src/http/server.ts: a body arriving too slowly, malformed HTTP).
 */
export function errorReply(apiError: ApiError, path: string): { status: number; body: object } {
  if (path.startsWith('/openai/')) return { status: openAIStatusOf(apiError), body: openAIErrorBody(apiError) };
  return { status: apiError.status, body: { error: { code: apiError.code, message: apiError.message } } };
}

/** OpenAI's error body (also the `error` frame of a chat stream that fails midway). */
export function openAIErrorBody(apiError: ApiError) {
  return {
    error: {
      message: apiError.message,
      type: openAIErrorType(openAIStatusOf(apiError)),
      param: null,
      code: apiError.code,
    },
  };
}

/** The status of an error under /openai/v1: OpenAI's where it differs from the spec's (errors.ts). */
const openAIStatusOf = (apiError: ApiError) => apiError.openAIStatus ?? apiError.status;

/** OpenAI's error `type` for a status (its SDK maps the status to its typed errors; the type is for people). */
function openAIErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'insufficient_quota';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}
