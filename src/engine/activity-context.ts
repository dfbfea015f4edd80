import { Context } from '@temporalio/activity';

/**
 * What a running activity may ask of its engine: the cancellation signal (passed on to the vendor call),
 * heartbeats (Temporal delivers cancellation through them) and the attempt number. The embedded engine
 * passes it to the activity as a second argument; under Temporal (which passes only the input) it comes
 * from Temporal's Context. Not an AsyncLocalStorage of our own: in Node 20 one turns on promise hooks for
 * every promise of the process, a visible share of the service's CPU (bench/README.md).
 */
export interface ActivityContext {
  signal: AbortSignal;
  heartbeat(details?: unknown): void;
  attempt: number;
}

const never = new AbortController().signal;

/** The context the engine passed, else Temporal's (a Temporal worker), else an inert one (a plain call). */
export function currentActivityContext(passed?: ActivityContext): ActivityContext {
  if (passed) return passed;
  try {
    const temporal = Context.current();
    return {
      signal: temporal.cancellationSignal,
      heartbeat: (details) => temporal.heartbeat(details),
      attempt: temporal.info.attempt,
    };
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
