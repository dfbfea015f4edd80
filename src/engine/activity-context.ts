import { AsyncLocalStorage } from 'node:async_hooks';
import { Context } from '@temporalio/activity';

/**
 * What a running activity may ask of its engine: the cancellation signal (passed on to the vendor call),
 * heartbeats (Temporal delivers cancellation through them) and the attempt number. Activities run under
 * Temporal's Context or, embedded, under this AsyncLocalStorage.
 */
export interface ActivityContext {
  signal: AbortSignal;
  heartbeat(details?: unknown): void;
  attempt: number;
}

const storage = new AsyncLocalStorage<ActivityContext>();
const never = new AbortController().signal;

export function runWithActivityContext<T>(context: ActivityContext, fn: () => Promise<T>): Promise<T> {
  return storage.run(context, fn);
}

export function currentActivityContext(): ActivityContext {
  const local = storage.getStore();
  if (local) return local;
  try {
    const temporal = Context.current();
    return { signal: temporal.cancellationSignal, heartbeat: (details) => temporal.heartbeat(details), attempt: temporal.info.attempt };
  } catch {
    return { signal: never, heartbeat: () => undefined, attempt: 1 };
  }
}

/** An AbortError: Temporal reports it as "cancelled" after a cancel request; flows test for the name. */
export function abortError(message = 'The operation was cancelled.'): Error {
  const error = new Error(message);
  error.name = 'AbortError';
  return error;
}
