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
  // One controller that each of the three aborts, rather than three merged by AbortSignal.any: in Node 20 that
  // merge and its extra controllers cost 25-50 µs per call, which a CPU profile of chat completions at
  // saturation showed (bench/README.md, 2026-11-29).
  const merged = new AbortController();
  let stoppedBy: 'cancelled' | 'timeout' | undefined;
  const stop = (why: 'cancelled' | 'timeout', reason: unknown) => {
    if (merged.signal.aborted) return;
    stoppedBy = why;
    merged.abort(reason);
  };
  const timer = setTimeout(
    () => stop('timeout', new DOMException(`The call did not finish within ${timeoutMs} ms.`, 'TimeoutError')),
    timeoutMs,
  );
  // A pending deadline must not keep a process alive that has nothing else to do.
  timer.unref?.();
  const onCallerAbort = () => stop('cancelled', callerSignal!.reason);
  if (callerSignal?.aborted) onCallerAbort();
  else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  let completed = false;

  return {
    signal: merged.signal,
    stopReason() {
      // The caller's abort wins over the deadline, even when the deadline fired first.
      if (callerSignal?.aborted) return 'cancelled';
      return stoppedBy;
    },
    remainingMs: () => Math.max(0, deadlineAt - Date.now()),
    complete() {
      completed = true;
    },
    close() {
      clearTimeout(timer);
      // A caller's signal may outlive this call (a job's, shared by its calls): it must not keep this scope.
      callerSignal?.removeEventListener('abort', onCallerAbort);
      // Aborting costs an exception object with a stack trace and an event: only when something may still be in
      // flight.
      if (!completed) stop('cancelled', new DOMException('The call was closed.', 'AbortError'));
    },
  };
}
