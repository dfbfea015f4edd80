import {
  ActivityCancellationType,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import { SEARCH_ATTRIBUTES } from '../src/engine/search-attributes';
import { bookkeepingTaskQueue, cancelSignal, statusQuery, type WakeSignal } from './definitions';
import type { FlowContext } from './flow-context';
import type { ActivityLane, FlowDefinition } from './flow-definition';

/**
 * Options of a vendor call's activity: long, heartbeating, cancelled by waiting for it (the SDK's effective
 * default is TRY_CANCEL; WAIT lets finalisation see the usage of an aborted call), retried a little but never on
 * a classified vendor failure (the activity reports those as an outcome).
 */
export const GENERATION_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '30 minutes',
  // The activities heartbeat every 2 s: a worker that died is noticed after five missed beats, and its call runs
  // again on another worker.
  heartbeatTimeout: '10 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['ProviderError'],
  },
};

/** Options of the bookkeeping activities (database writes, idempotent): short, retried long. */
export const BOOKKEEPING_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 20 },
};

/**
 * The patch (versioning marker) of workflows that put their bookkeeping on its own queue and may abandon the wait
 * for their start (FlowContext.abandonable). Histories recorded before it have no marker: they replay as they ran
 * (bookkeeping on the workflow's queue, the start shielded), so workflows running at a deploy go on unchanged.
 */
export const OWN_BOOKKEEPING_QUEUE = 'own-bookkeeping-queue';

/**
 * The patch of workflows that run their bookkeeping steps (finalisations, webhooks claimed, the Runs' waits) as local
 * activities: in the worker that runs the workflow task, recorded as a marker in the same task, with no dispatch
 * through the server and no activity task of their own (half the round trips and history events of a Response).
 * They are short idempotent database writes, so a worker that dies mid-step only repeats them. Histories recorded
 * before it replay as they ran (on the bookkeeping queue).
 */
export const LOCAL_BOOKKEEPING = 'local-bookkeeping';

/** Options of the bookkeeping steps as local activities: retried within the task up to a minute, then by timers. */
export const LOCAL_BOOKKEEPING_ACTIVITY: LocalActivityOptions = {
  startToCloseTimeout: '1 minute',
  localRetryThreshold: '10 seconds',
  retry: BOOKKEEPING_ACTIVITY.retry,
};

/**
 * What a workflow's activities are scheduled with, decided once at its start (`patched` must be asked in the same
 * place on every replay): `bookkeeping` for its database steps (local activities since LOCAL_BOOKKEEPING, before that
 * on the bookkeeping queue), `start` for its start, which stays on the workflow's queue (a start waiting for a slot is
 * what `queued` means) but is abandoned at a cancel (TRY_CANCEL: the workflow goes on at once, and the start, if it
 * still runs, starts nothing that has a cancel request).
 */
export function bookkeepingOptions(): {
  versioned: boolean;
  bookkeeping: ActivityOptions;
  start: ActivityOptions;
  localBookkeeping: LocalActivityOptions | undefined;
} {
  if (!patched(OWN_BOOKKEEPING_QUEUE))
    return {
      versioned: false,
      bookkeeping: BOOKKEEPING_ACTIVITY,
      start: BOOKKEEPING_ACTIVITY,
      localBookkeeping: undefined,
    };
  return {
    versioned: true,
    bookkeeping: { ...BOOKKEEPING_ACTIVITY, taskQueue: bookkeepingTaskQueue(workflowInfo().taskQueue) },
    start: { ...BOOKKEEPING_ACTIVITY, cancellationType: ActivityCancellationType.TRY_CANCEL },
    localBookkeeping: patched(LOCAL_BOOKKEEPING) ? LOCAL_BOOKKEEPING_ACTIVITY : undefined,
  };
}

/**
 * The FlowContext of a Temporal workflow: a CancellationScope that the `cancel` signal cancels, the `status`
 * query (and the SwitchyardStatus search attribute), and `sleep` as a durable timer raced against the
 * `wakeSignals` (and a cancel). Call it once, at the start of the workflow function (it registers the handlers).
 *
 * SwitchyardStatus is upserted only by a workflow that started with it. That is read from the start event, so
 * replay decides the same way: workflows started before the attribute existed (or on a namespace that refused
 * to register it, where an upsert would fail the task) never upsert, and their histories replay unchanged.
 */
export function temporalFlowContext<Activities>(
  activities: Activities,
  wakeSignals: readonly WakeSignal[] = [],
  options: { abandonableStart?: boolean } = {},
): FlowContext<Activities> {
  let status = 'queued';
  let cancelled = false;
  let indexedStatus = workflowInfo().typedSearchAttributes.get(SEARCH_ATTRIBUTES.status);
  const woken = new Set<string>();
  const scope = new CancellationScope();
  setHandler(cancelSignal, () => {
    cancelled = true;
    scope.cancel();
  });
  setHandler(statusQuery, () => status);
  for (const signal of wakeSignals) setHandler(signal, () => void woken.add(signal.name));
  return {
    activities,
    cancellable: (fn) => scope.run(fn),
    nonCancellable: (fn) => CancellationScope.nonCancellable(fn),
    // Versioned workflows only (bookkeepingOptions): in the cancel's scope, its activity scheduled with TRY_CANCEL.
    abandonable: async (fn, cancelledResult) => {
      if (!options.abandonableStart) return CancellationScope.nonCancellable(fn);
      try {
        return await scope.run(fn);
      } catch (error) {
        if (isCancellation(error)) return cancelledResult;
        throw error;
      }
    },
    isCancellation,
    // A cancel of the workflow itself (Temporal UI, CLI) counts as a cancel request too: it cancels the root scope.
    cancelRequested: () => cancelled || CancellationScope.current().consideredCancelled,
    patched,
    setStatus: (next) => {
      status = next;
      if (indexedStatus !== undefined && indexedStatus !== next) {
        upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.status, value: next }]);
        indexedStatus = next;
      }
    },
    async sleep(milliseconds, wakeOn) {
      if (milliseconds > 0 && !woken.has(wakeOn.name) && !cancelled) {
        try {
          await condition(() => woken.has(wakeOn.name) || cancelled, milliseconds);
        } catch (error) {
          // The workflow itself was cancelled (not by our signal): the flow finalises the resource as cancelled.
          if (!isCancellation(error)) throw error;
          cancelled = true;
        }
      }
      woken.delete(wakeOn.name);
    },
  };
}

/**
 * Runs a kind's flow and, when it throws (a bookkeeping activity ran out of retries: the database unreachable for
 * minutes), ends the resource with the kind's failure ending, the same function the embedded engine calls after its
 * last attempt, so no resource stays active because its last step failed. A cancel of the workflow itself is not a
 * failure: the flow has finalised it already.
 */
export async function endingFailed(flow: () => Promise<string>, ending: () => Promise<string>): Promise<string> {
  try {
    return await flow();
  } catch (error) {
    if (isCancellation(error)) throw error;
    return CancellationScope.nonCancellable(ending);
  }
}

/**
 * The Temporal workflow of a flow (the bundle exports one per FlowDefinition, named by its workflowType,
 * workflows/index.ts): its activities proxied by lane (generation, start, bookkeeping: bookkeepingOptions), its
 * FlowContext, and its failure ending when a step runs out of retries.
 */
export function temporalWorkflow<Activities, Input>(
  definition: FlowDefinition<Activities, Input>,
): (input: Input) => Promise<string> {
  const generation: ActivityOptions =
    definition.generationAttempts === undefined
      ? GENERATION_ACTIVITY
      : {
          ...GENERATION_ACTIVITY,
          retry: { ...GENERATION_ACTIVITY.retry, maximumAttempts: definition.generationAttempts },
        };
  const workflow = async (input: Input): Promise<string> => {
    const options = bookkeepingOptions();
    const lanes: Record<ActivityLane, Record<string, unknown>> = {
      generation: proxyActivities(generation),
      start: proxyActivities(options.start),
      bookkeeping: options.localBookkeeping
        ? proxyLocalActivities(options.localBookkeeping)
        : proxyActivities(options.bookkeeping),
    };
    // Named one by one: proxyActivities returns a Proxy with no own keys, so spreading it copies nothing.
    const activities = Object.fromEntries(
      Object.entries<{ lane: ActivityLane }>(definition.steps).map(([name, step]) => [name, lanes[step.lane][name]]),
    ) as Activities;
    const context = temporalFlowContext(activities, definition.wakeSignals, {
      abandonableStart: definition.abandonableStart && options.versioned,
    });
    return endingFailed(
      () => definition.run(context, input),
      () => definition.abandon(context.activities, input),
    );
  };
  // The name Temporal's UI and stack traces show; the bundle exports it under the same name.
  Object.defineProperty(workflow, 'name', { value: definition.workflowType });
  return workflow;
}
