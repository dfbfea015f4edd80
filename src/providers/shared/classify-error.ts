import { APICallError } from '@ai-sdk/provider';
import { ProviderError, type ProviderErrorKind } from '../provider';
import { findReplyTooLarge } from './vendor-fetch';

export interface ClassifyContext {
  vendor: string;
  /** Redacted from any vendor text we quote (vendors echo rejected keys back). */
  apiKey?: string;
  /** Set when our own scope stopped the call: it decides between `cancelled` and `timeout`. */
  stopReason?: 'cancelled' | 'timeout';
}

/**
 * The one place an AI SDK / network / abort failure becomes a ProviderError. Messages name the vendor and
 * the status and quote vendor text only after redaction (never for auth failures), and carry no request
 * headers: an APICallError is not kept as `cause` because it holds the request body and response body.
 */
export function classifyProviderError(error: unknown, context: ClassifyContext): ProviderError {
  if (ProviderError.isInstance(error)) return error;
  const { vendor } = context;
  // Our own stop wins: an aborted fetch surfaces as anything from AbortError to "terminated".
  if (context.stopReason === 'cancelled') {
    return new ProviderError({ vendor, kind: 'cancelled', message: `The call to ${vendor} was cancelled.` });
  }
  if (context.stopReason === 'timeout') {
    return new ProviderError({ vendor, kind: 'timeout', message: `The call to ${vendor} timed out.` });
  }
  // Past the reply budget (vendor-fetch.ts): another attempt would be as large.
  const tooLarge = findReplyTooLarge(error);
  if (tooLarge)
    return new ProviderError({
      vendor,
      kind: 'malformed',
      message: `${vendor} sent a reply that could not be read: ${tooLarge.message}.`,
    });
  if (APICallError.isInstance(error)) return fromApiCallError(error, context);

  const name = errorName(error);
  if (name === 'AbortError') {
    return new ProviderError({ vendor, kind: 'cancelled', message: `The call to ${vendor} was aborted.` });
  }
  if (name === 'TimeoutError') {
    return new ProviderError({ vendor, kind: 'timeout', message: `The call to ${vendor} timed out.` });
  }
  if (MALFORMED_ERROR_NAMES.has(name)) {
    return new ProviderError({
      vendor,
      kind: 'malformed',
      message: `${vendor} sent a reply that could not be read: ${quote(messageOf(error), context)}`,
    });
  }
  if (BAD_REQUEST_ERROR_NAMES.has(name)) {
    return new ProviderError({
      vendor,
      kind: 'bad_request',
      message: `The request for ${vendor} is invalid: ${quote(messageOf(error), context)}`,
    });
  }
  const networkKind = networkErrorKind(error);
  if (networkKind) {
    return new ProviderError({
      vendor,
      kind: networkKind,
      message:
        networkKind === 'timeout'
          ? `The connection to ${vendor} timed out.`
          : `The connection to ${vendor} failed: ${quote(deepestMessage(error), context)}`,
      cause: error,
    });
  }
  if (!isErrorLike(error) && typeof error === 'object' && error !== null) {
    return fromStreamErrorEvent(error as Record<string, unknown>, context);
  }
  return new ProviderError({
    vendor,
    kind: 'server',
    message: `The call to ${vendor} failed: ${quote(messageOf(error), context)}`,
    cause: error,
  });
}

function fromApiCallError(error: APICallError, context: ClassifyContext): ProviderError {
  const { vendor } = context;
  const status = error.statusCode;
  const headers = error.responseHeaders ?? {};
  const vendorRequestId = headers['x-request-id'] ?? headers['request-id'] ?? undefined;
  if (status === undefined) {
    // No HTTP answer at all: the SDK wraps connection failures as status-less APICallErrors.
    const kind = networkErrorKind(error.cause) ?? 'network';
    return new ProviderError({
      vendor,
      kind,
      message: `The connection to ${vendor} failed: ${quote(deepestMessage(error), context)}`,
    });
  }
  if (status >= 200 && status < 300) {
    // A success status whose body could not be read: the connection died while reading it, or the body
    // itself was not what the vendor's format promises.
    const readKind = networkErrorKind(error.cause);
    if (readKind) {
      return new ProviderError({
        vendor,
        kind: readKind,
        status,
        vendorRequestId,
        message: `The connection to ${vendor} failed while reading its answer: ${quote(deepestMessage(error), context)}`,
      });
    }
    return new ProviderError({
      vendor,
      kind: 'malformed',
      status,
      vendorRequestId,
      message: `${vendor} answered HTTP ${status} with a body that could not be read.`,
    });
  }
  const kind = kindForStatus(status);
  const retryAfterMs = kind === 'rate_limit' || kind === 'server' ? parseRetryAfter(headers) : undefined;
  // Auth failures are where vendors quote the rejected key: their text is never repeated.
  const detail = kind === 'auth' ? '' : `: ${quote(error.message, context)}`;
  return new ProviderError({
    vendor,
    kind,
    status,
    retryAfterMs,
    vendorRequestId,
    message: `${vendor} answered HTTP ${status}${detail}`,
  });
}

export function kindForStatus(status: number): ProviderErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'not_found';
  if (status === 408) return 'timeout';
  if (status === 409 || status === 429) return 'rate_limit';
  if (status >= 500) return 'server';
  return 'bad_request';
}

/** `retry-after-ms` (OpenAI) is more precise than `retry-after` (seconds or an HTTP date). */
export function parseRetryAfter(headers: Record<string, string | undefined>): number | undefined {
  const milliseconds = Number.parseFloat(headers['retry-after-ms'] ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.round(milliseconds);
  const value = headers['retry-after'];
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(value);
  if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  return undefined;
}

/**
 * An error event inside an otherwise healthy stream (OpenAI `{type:"error", code}`, Anthropic
 * `{type:"overloaded_error"}`, ...): the SDK hands us the vendor's object as-is.
 */
function fromStreamErrorEvent(event: Record<string, unknown>, context: ClassifyContext): ProviderError {
  const nested =
    typeof event.error === 'object' && event.error !== null ? (event.error as Record<string, unknown>) : event;
  const label = [nested.type, nested.code, nested.status].filter((v) => typeof v === 'string').join(' ');
  const message = typeof nested.message === 'string' ? nested.message : label || 'unknown error';
  let kind: ProviderErrorKind = 'server';
  // The OpenAI provider already derives an HTTP status for its stream errors.
  if (typeof event.statusCode === 'number') kind = kindForStatus(event.statusCode);
  else if (/rate_limit|resource_exhausted|too_many/i.test(label)) kind = 'rate_limit';
  else if (/authentication|permission|unauthenticated|invalid_api_key/i.test(label)) kind = 'auth';
  else if (/invalid_request|invalid_argument|context_length/i.test(label)) kind = 'bad_request';
  const detail = kind === 'auth' ? '' : `: ${quote(message, context)}`;
  return new ProviderError({
    vendor: context.vendor,
    kind,
    message: `${context.vendor} reported a stream error${detail}`,
  });
}

const MALFORMED_ERROR_NAMES = new Set([
  'AI_JSONParseError',
  'AI_TypeValidationError',
  'AI_InvalidResponseDataError',
  'AI_EmptyResponseBodyError',
  'AI_InvalidStreamPartError',
  'AI_NoContentGeneratedError',
  'AI_NoOutputGeneratedError',
  'AI_InvalidToolInputError',
  'AI_NoSuchToolError',
  // The vendor ignored a forced tool choice: the request was fine, the answer is not.
  'AI_ToolChoiceViolationError',
]);

const BAD_REQUEST_ERROR_NAMES = new Set([
  'AI_InvalidPromptError',
  'AI_InvalidArgumentError',
  'AI_UnsupportedFunctionalityError',
  'AI_InvalidMessageRoleError',
  'AI_MessageConversionError',
]);

const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/** Walks the cause chain for a socket-level code; undici's mid-body failure is a bare "terminated". */
function networkErrorKind(error: unknown): 'network' | 'timeout' | undefined {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (isErrorLike(current) && !seen.has(current)) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (TIMEOUT_CODES.has(code)) return 'timeout';
      if (NETWORK_CODES.has(code)) return 'network';
    }
    if (current.name === 'TypeError' && /^(terminated|fetch failed)$/i.test(current.message)) return 'network';
    if (/socket hang up|other side closed/i.test(current.message)) return 'network';
    current = current.cause;
  }
  return undefined;
}

function errorName(error: unknown): string {
  if (typeof error !== 'object' || error === null) return '';
  const name = (error as { name?: unknown }).name;
  return typeof name === 'string' ? name : '';
}

/**
 * Duck-typed on purpose: errors from Node's fetch are created in another realm than jest's (or a
 * sandbox's) globals, so `instanceof Error` is false for them there.
 */
function isErrorLike(value: unknown): value is { name: string; message: string; cause?: unknown } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { message?: unknown }).message === 'string' &&
    typeof (value as { name?: unknown }).name === 'string'
  );
}

function messageOf(error: unknown): string {
  if (isErrorLike(error)) return error.message;
  return typeof error === 'string' ? error : 'unknown error';
}

function deepestMessage(error: unknown): string {
  let current: unknown = error;
  let message = messageOf(error);
  const seen = new Set<unknown>();
  while (isErrorLike(current) && !seen.has(current)) {
    seen.add(current);
    if (current.message) message = current.message;
    current = current.cause;
  }
  return message;
}

const SECRET_PATTERNS = [/\bsk-[A-Za-z0-9_*.-]{6,}/g, /\bAIza[0-9A-Za-z_-]{10,}/g, /\bBearer\s+\S+/gi];

/** Vendor text as we are willing to repeat it: secrets removed, one line, bounded. */
export function quote(text: string, context: Pick<ClassifyContext, 'apiKey'>): string {
  let result = text;
  if (context.apiKey && context.apiKey.length >= 4) result = result.split(context.apiKey).join('[redacted]');
  for (const pattern of SECRET_PATTERNS) result = result.replace(pattern, '[redacted]');
  result = result.replace(/\s+/g, ' ').trim();
  return result.length > 300 ? `${result.slice(0, 300)}…` : result;
}
