import { waitAtMost } from '../time';

/**
 * The process's way out of service (a deploy's SIGTERM): first `draining` (readiness answers 503 so a load balancer
 * stops sending, while running work and open streams go on for the grace period), then `handover` (what still runs is
 * left to the next process: open event streams end cleanly so their clients resume with `starting_after`).
 */
export interface Lifecycle {
  readonly draining: boolean;
  /** Aborted at hand-over: event streams still open end then. */
  readonly handover: AbortSignal;
  beginDrain(): void;
  handOver(): void;
  /** Counts a stream as open until the returned function is called: a drain lets open streams go on (`streamsEnded`). */
  streamOpened(): () => void;
  /**
   * Resolves once no stream is open, or after `graceMs`. A drain waits for this as well as for the engine's jobs: on
   * Temporal nothing runs in the API process, so without it a SIGTERM cut every stream at once, and a streamed creation
   * answered during the grace ended before its first event (its client never learned the Response's id).
   */
  streamsEnded(graceMs: number): Promise<void>;
}

export function createLifecycle(): Lifecycle {
  let draining = false;
  const handover = new AbortController();
  let open = 0;
  const waiting: Array<() => void> = [];
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
    streamOpened() {
      open++;
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        if (--open === 0) waiting.splice(0).forEach((resolve) => resolve());
      };
    },
    async streamsEnded(graceMs) {
      if (open > 0) await waitAtMost(graceMs, (resolve) => waiting.push(resolve));
    },
  };
}
