import type { WakeSignal } from './definitions';

/**
 * What an engine-neutral flow may use. The Temporal wrapper implements it with proxyActivities and
 * CancellationScopes; the embedded runner with direct calls, an AbortController and recorded steps.
 * Flows must stay deterministic: no I/O, clocks or randomness outside activities.
 */
export interface FlowContext<Activities> {
  readonly activities: Activities;
  /** Runs fn so that a cancel request aborts the activities started inside it. */
  cancellable<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs fn shielded from cancellation (finalisation must complete). */
  nonCancellable<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Runs fn, a step that may wait for a worker before it starts and that leaves alone a resource with a cancel
   * request (a start: it starts only what no cancel reached). A cancel request while it waits or runs answers
   * `cancelled` at once instead of waiting for it, so the cancel is finalised (and its webhook sent) without waiting
   * for a worker to free up: under Temporal every activity slot may hold a long generation. The embedded engine runs
   * the step in process at once: there it is nonCancellable.
   */
  abandonable<T>(fn: () => Promise<T>, cancelled: T): Promise<T>;
  /** True when err is the result of a cancel request. */
  isCancellation(err: unknown): boolean;
  /** True once a cancel request arrived. */
  cancelRequested(): boolean;
  /**
   * Whether the flow takes a path added by a change of its shape (`id` names the change). Temporal: its `patched`
   * (true in a workflow that reached this point with the change, false in the replay of a history from before it, so
   * that history replays as it ran). The embedded engine: true (a re-run counts a recorded step only for the activity
   * that produced it, so a changed shape re-runs what it cannot replay).
   */
  patched(id: string): boolean;
  /** Live status for the engine's status query. */
  setStatus(status: string): void;
  /**
   * Waits `milliseconds` (a duration from an activity's result, measured by the database's clock: a deadline
   * would mix the clocks of the database, the worker and the Temporal server), until the signal `wakeOn`
   * arrives, or until a cancel request, whichever comes first. A signal only
   * wakes the flow: what it brought is read afterwards through an activity (the database is the record, so a
   * lost signal only delays until the deadline). The embedded engine suspends the job meanwhile, holding no
   * slot, and runs the flow again from its start when woken, its recorded steps replayed: code before the wait
   * must be replay-safe, as in any flow. There it suspends by throwing: never catch around a sleep.
   */
  sleep(milliseconds: number, wakeOn: WakeSignal): Promise<void>;
}
