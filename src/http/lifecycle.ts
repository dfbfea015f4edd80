/**
 * The process's way out of service (a deploy's SIGTERM): first `draining` (readiness answers 503 so a load balancer
 * stops sending, while running work goes on for the grace period), then `handover` (what still runs is left to the
 * next process: open event streams end cleanly so their clients resume with `starting_after`).
 */
export interface Lifecycle {
  readonly draining: boolean;
  /** Aborted at hand-over: event streams still open end then. */
  readonly handover: AbortSignal;
  beginDrain(): void;
  handOver(): void;
}

export function createLifecycle(): Lifecycle {
  let draining = false;
  const handover = new AbortController();
  return {
    get draining() {
      return draining;
    },
    handover: handover.signal,
    beginDrain() {
      draining = true;
    },
    handOver() {
      draining = true;
      handover.abort();
    },
  };
}
