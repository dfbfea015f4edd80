import { ApiError, executionFailed, invalidRequest, type ErrorArea } from '../errors';
import { ProviderError, type ProviderErrorKind } from './provider';

/**
 * The one place a vendor failure becomes an API error, shared by every endpoint that calls a vendor
 * (embeddings, chat, Responses, audio). Rules:
 * - The vendor's own status never leaks as ours: an upstream 401/403 means *our* vendor credentials are
 *   wrong, which the client cannot fix, so it is a 500 `<area>.execution_failed` naming the vendor, never
 *   a 401/403 that would tell the client its own key is bad.
 * - Only a vendor's 400 (the request itself was unacceptable, e.g. too long for the model) is the
 *   client's to fix: 400 `<area>.invalid_request`.
 * - Messages name the vendor and the status but never echo vendor text for auth failures (vendors
 *   quote the rejected key back in those).
 * ApiErrors pass through unchanged; anything else is an unexpected 500 whose message stays generic.
 */
export function vendorErrorToApiError(error: unknown, area: ErrorArea): ApiError {
  if (ApiError.isInstance(error)) return error;
  if (!ProviderError.isInstance(error)) return executionFailed(area, 'The model call failed unexpectedly.', error);
  const vendor = error.vendor;
  const status = error.status !== undefined ? ` (${error.status})` : '';
  if (error.kind === 'bad_request') {
    return withCause(
      invalidRequest(area, `Vendor ${vendor} rejected the request as invalid${status}: ${clip(error.message)}`),
      error,
    );
  }
  const message = `${describeKind(error.kind, vendor)}${status}${explain(error.kind)}.`;
  const transient = TRANSIENT[error.kind];
  if (!transient) return executionFailed(area, message, error);
  // Our own retries are spent: the client is told when to try again rather than retrying blindly on top of them.
  const retryAfter = Math.max(1, Math.ceil((error.retryAfterMs ?? transient.retryAfterMs) / 1000));
  return new ApiError(500, `${area}.execution_failed`, message, {
    cause: error,
    headers: { 'Retry-After': String(retryAfter) },
    openAIStatus: transient.openAIStatus,
  });
}

/**
 * Failures that outlasted the retries but may pass later: the spec's 500 with Retry-After (the vendor's own when it
 * sent one), and under /openai/v1 the status OpenAI answers them with (429 rate limited, 503 overloaded/slow).
 */
const TRANSIENT: Partial<Record<ProviderErrorKind, { openAIStatus: number; retryAfterMs: number }>> = {
  rate_limit: { openAIStatus: 429, retryAfterMs: 5_000 },
  timeout: { openAIStatus: 503, retryAfterMs: 1_000 },
};

function describeKind(kind: ProviderErrorKind, vendor: string): string {
  switch (kind) {
    case 'auth':
      return `Vendor ${vendor} rejected the request`;
    case 'rate_limit':
      return `Vendor ${vendor} is rate limiting requests`;
    case 'not_found':
      return `Vendor ${vendor} does not know the requested model`;
    case 'server':
      return `Vendor ${vendor} failed to process the request`;
    case 'timeout':
      return `Vendor ${vendor} did not answer in time`;
    case 'network':
      return `Vendor ${vendor} could not be reached`;
    case 'malformed':
      return `Vendor ${vendor} sent a reply that could not be read`;
    case 'cancelled':
      return `The call to vendor ${vendor} was cancelled`;
    case 'bad_request':
      return `Vendor ${vendor} rejected the request as invalid`;
  }
}

function explain(kind: ProviderErrorKind): string {
  if (kind === 'auth')
    return ": the service's credentials for this vendor were refused; this is not a problem with your API key";
  if (kind === 'rate_limit') return '; retry later';
  return '';
}

function withCause(apiError: ApiError, cause: unknown): ApiError {
  return new ApiError(apiError.status, apiError.code, apiError.message, { cause });
}

const clip = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/**
 * A failed vendor call of a generation (a Response's, a Run's), as the code and message it ends with: a
 * classified vendor failure, or a request the vendor refused (400). Undefined for anything else, which the
 * activity rethrows for its engine to retry.
 */
export function vendorFailureOf(error: unknown, area: ErrorArea): { code: string; message: string } | undefined {
  if (!ProviderError.isInstance(error) && (error as { status?: number })?.status !== 400) return undefined;
  const apiError = vendorErrorToApiError(error, area);
  return { code: apiError.code, message: apiError.message };
}
