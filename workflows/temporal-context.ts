import { CancellationScope, condition, defineQuery, defineSignal, isCancellation, setHandler } from '@temporalio/workflow';
import type { FlowContext } from './flow-context';

/** Every kind's workflow answers these: `cancel` (a signal) and `status` (a query). */
export const cancelSignal = defineSignal<[reason?: string]>('cancel');
export const statusQuery = defineQuery<string>('status');

/**
 * The FlowContext of a Temporal workflow: a CancellationScope that the `cancel` signal cancels, the `status`
 * query, and `sleepUntil` as a durable timer raced against the `wakeSignals` (and a cancel). Call it once, at the
 * start of the workflow function (it registers the handlers).
 */
export function temporalFlowContext<Activities>(activities: Activities, wakeSignals: readonly string[] = []): FlowContext<Activities> {
  let status = 'queued';
  let cancelled = false;
  const woken = new Set<string>();
  const scope = new CancellationScope();
  setHandler(cancelSignal, () => {
    cancelled = true;
    scope.cancel();
  });
  setHandler(statusQuery, () => status);
  for (const name of wakeSignals) setHandler(defineSignal(name), () => void woken.add(name));
  return {
    activities,
    cancellable: (fn) => scope.run(fn),
    nonCancellable: (fn) => CancellationScope.nonCancellable(fn),
    isCancellation,
    cancelRequested: () => cancelled,
    setStatus: (next) => {
      status = next;
    },
    async sleepUntil(deadline, wakeOn) {
      // Workflow time is replayed from history, so the same wait is taken again on replay.
      const remaining = deadline - Date.now();
      if (remaining > 0 && !woken.has(wakeOn) && !cancelled) await condition(() => woken.has(wakeOn) || cancelled, remaining);
      woken.delete(wakeOn);
    },
  };
}
