import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * The messages a job's workflow answers, defined once: the workflows register handlers for these objects and the
 * engines send them by the same objects (a renamed or retyped message fails to compile on both sides instead of
 * being dropped by the server as an unknown name). Their names are durable: renaming one breaks running workflows.
 * Importable outside a workflow (definitions only, as in Temporal's samples).
 */

/** Every kind: cancel the job; the workflow decides what it means in its current state. */
export const cancelSignal = defineSignal('cancel');

/** Every kind: the resource's live status as the workflow sees it (queued, in_progress, requires_action, …). */
export const statusQuery = defineQuery<string>('status');

/** Runs: tool outputs are stored; wakes the flow waiting for them (what they say is read from the database). */
export const submitToolOutputsSignal = defineSignal('submit_tool_outputs');

/** The signals a flow may wait on in `FlowContext.sleep` (wake-ups only: their meaning is in the database). */
export type WakeSignal = typeof submitToolOutputsSignal;

/**
 * The task queue of a workflow's bookkeeping activities: its own queue's name with this suffix, which every worker
 * also polls, with slots of its own (src/engine/temporal-engine.ts, runTemporalWorker). On the workflow's queue,
 * finalising a cancel (and sending its webhook) waited behind whatever filled the worker's activity slots: long
 * generations, for as long as they ran.
 */
export const bookkeepingTaskQueue = (taskQueue: string) => `${taskQueue}-bookkeeping`;
