/**
 * The one error hierarchy. Services throw these; the error middleware (src/http/error-middleware.ts)
 * is the only place that turns them into the spec's envelope `{error: {code, message}}`.
 * Codes are dotted `area.reason` (api-decisions 13). Check with `ApiError.isInstance`, not `instanceof`:
 * jest module registries and the Temporal sandbox both break `instanceof` across realms.
 */
const marker = Symbol.for('switchyard.ApiError');

export type ErrorArea =
  | 'request'
  | 'auth'
  | 'admin'
  | 'conversation'
  | 'item'
  | 'response'
  | 'assistant'
  | 'model'
  | 'vendor'
  | 'embedding'
  | 'audio'
  | 'transcription'
  | 'organization'
  | 'thread'
  | 'message'
  | 'run'
  | 'chat'
  | 'mcp';

export class ApiError extends Error {
  override readonly name: string = 'ApiError';
  readonly [marker] = true;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string>; openAIStatus?: number },
  ) {
    super(message, options);
    this.headers = options?.headers;
    this.openAIStatus = options?.openAIStatus;
  }

  /** Headers the error reply carries (Retry-After of a 429). */
  readonly headers: Record<string, string> | undefined;
  /**
   * The status OpenAI's API answers the same failure with, where the spec's differs: under /openai/v1 the reply
   * has this status (a vendor's rate limit that outlasted the retries is 429 there, 500 in the spec).
   */
  readonly openAIStatus: number | undefined;

  static isInstance(value: unknown): value is ApiError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

export const invalidRequest = (area: ErrorArea, message: string, reason = 'invalid_request') =>
  new ApiError(400, `${area}.${reason}`, message);
export const unauthorized = (message: string) => new ApiError(401, 'auth.unauthorized', message);
export const paymentRequired = (message = 'The account balance is exhausted; top it up to continue.') =>
  new ApiError(402, 'organization.payment_required', message);
export const forbidden = (area: ErrorArea, message: string) => new ApiError(403, `${area}.forbidden`, message);
export const notFound = (area: ErrorArea, message: string) => new ApiError(404, `${area}.not_found`, message);
export const executionFailed = (area: ErrorArea, message: string, cause?: unknown) =>
  new ApiError(500, `${area}.execution_failed`, message, { cause });

/** 429 with the seconds after which a retry can succeed (api-decisions 26). */
export const rateLimited = (message: string, retryAfterSeconds: number) =>
  new ApiError(429, 'request.rate_limited', message, {
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });
