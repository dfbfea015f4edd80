import type { ProviderError } from '../provider';
import type { CallScope } from './call-scope';

const BASE_DELAY_MS = 200;
const MAX_BACKOFF_MS = 8_000;
/** A vendor asking for a longer pause than this is not waited for: the error goes up with retryAfterMs. */
export const MAX_RETRY_AFTER_MS = 30_000;

/**
 * How long to wait before attempt `retryNumber` (1 = first retry), or undefined to give up now.
 * Retry-After, when the vendor sent one, is honoured exactly; otherwise exponential backoff with
 * "equal jitter" (half fixed, half random) so that many clients throttled together do not return together.
 * A wait that would outlast the call's deadline is not started: the real error beats a timeout.
 */
export function retryDelayMs(
  error: ProviderError,
  retryNumber: number,
  maxRetries: number,
  remainingMs: number,
  random: () => number = Math.random,
): number | undefined {
  if (!error.isRetryable || retryNumber > maxRetries) return undefined;
  let delay: number;
  if (error.retryAfterMs !== undefined) {
    if (error.retryAfterMs > MAX_RETRY_AFTER_MS) return undefined;
    delay = error.retryAfterMs;
  } else {
    const ceiling = Math.min(MAX_BACKOFF_MS, BASE_DELAY_MS * 2 ** (retryNumber - 1));
    delay = ceiling / 2 + random() * (ceiling / 2);
  }
  return delay < remainingMs ? delay : undefined;
}

/** Waits `ms`, or rejects with the scope's abort reason the moment the call is stopped. */
export function sleep(ms: number, scope: CallScope): Promise<void> {
  const { signal } = scope;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs `attempt` until it succeeds, the error is not worth retrying, or `maxRetries` retries are spent.
 * `attempt` must throw ProviderErrors (classified) so the decision is made on kinds, not on raw errors.
 */
export async function withRetries<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  options: { maxRetries: number; scope: CallScope; classify: (error: unknown) => ProviderError },
): Promise<T> {
  for (let retryNumber = 0; ; retryNumber += 1) {
    try {
      return await attempt(retryNumber + 1);
    } catch (raw) {
      const error = options.classify(raw);
      const delay = retryDelayMs(error, retryNumber + 1, options.maxRetries, options.scope.remainingMs());
      if (delay === undefined) throw error;
      await sleep(delay, options.scope);
    }
  }
}
