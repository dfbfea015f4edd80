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
  /** True when err is the result of a cancel request. */
  isCancellation(err: unknown): boolean;
  /** True once a cancel request arrived. */
  cancelRequested(): boolean;
  /** Live status for the engine's status query. */
  setStatus(status: string): void;
}
