/**
 * One upstream call's lifetime: the caller's signal, the overall deadline (`timeoutMs`, covering every
 * attempt and every backoff wait) and our own stop (a stream consumer that quits early) merged into the
 * single signal handed to the AI SDK, so any of the three cancels the HTTP request at once.
 * Remembering *which* one fired is what lets an abort be classified as `cancelled` or `timeout`.
 */
export interface CallScope {
  readonly signal: AbortSignal;
  /** Why the call was stopped, if it was. The caller's abort wins over the deadline. */
  stopReason(): 'cancelled' | 'timeout' | undefined;
  /** Milliseconds left before the deadline (never negative). */
  remainingMs(): number;
  /** The upstream answer was read to its end: close() then has nothing to cancel. */
  complete(): void;
  /** Releases the timer and cancels anything still in flight (after complete(), only the timer). */
  close(): void;
}

export function openCallScope(callerSignal: AbortSignal | undefined, timeoutMs: number): CallScope {
  const deadlineAt = Date.now() + timeoutMs;
  const deadline = new AbortController();
  const own = new AbortController();
  const timer = setTimeout(() => {
    deadline.abort(new DOMException(`The call did not finish within ${timeoutMs} ms.`, 'TimeoutError'));
  }, timeoutMs);
  // A pending deadline must not keep a process alive that has nothing else to do.
  timer.unref?.();
  const signals = [deadline.signal, own.signal];
  if (callerSignal) signals.push(callerSignal);
  const signal = AbortSignal.any(signals);
  let completed = false;

  return {
    signal,
    stopReason() {
      if (callerSignal?.aborted || own.signal.aborted) return 'cancelled';
      if (deadline.signal.aborted) return 'timeout';
      return undefined;
    },
    remainingMs: () => Math.max(0, deadlineAt - Date.now()),
    complete() {
      completed = true;
    },
    close() {
      clearTimeout(timer);
      // Aborting costs an exception object with a stack trace and an event through every merged signal: only
      // when something may still be in flight.
      if (!completed && !own.signal.aborted) own.abort(new DOMException('The call was closed.', 'AbortError'));
    },
  };
}
