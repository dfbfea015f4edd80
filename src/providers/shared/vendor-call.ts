import type { VendorAdapterOptions } from '../provider';
import { openCallScope } from './call-scope';
import { classifyProviderError } from './classify-error';
import { withRetries } from './retry';

/**
 * One whole (non-streaming) vendor call: the caller's signal and the adapter's deadline merged into the
 * signal `attempt` hands the vendor SDK, attempts repeated as the retry policy allows, and every failure
 * classified into a ProviderError that never quotes the key. Embeddings, speech and transcription are this
 * plus the request and result mapping of their kind.
 */
export async function callVendor<T>(
  options: VendorAdapterOptions,
  /** The request's signal, and its own retries (a route's target with another after it: 0) instead of the adapter's. */
  request: { signal?: AbortSignal; maxRetries?: number },
  attempt: (abortSignal: AbortSignal) => Promise<T>,
): Promise<T> {
  const scope = openCallScope(request.signal, options.timeoutMs);
  const classify = (error: unknown) =>
    classifyProviderError(error, { vendor: options.vendor, apiKey: options.apiKey, stopReason: scope.stopReason() });
  try {
    return await withRetries(
      async () => {
        const result = await attempt(scope.signal);
        scope.complete();
        return result;
      },
      { maxRetries: request.maxRetries ?? options.maxRetries, scope, classify },
    );
  } catch (error) {
    throw classify(error);
  } finally {
    scope.close();
  }
}
