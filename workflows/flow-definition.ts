import type { WakeSignal } from './definitions';
import type { FlowContext } from './flow-context';

/**
 * What the embedded engine does with an activity's result on a re-run after a crash: `record`ed (not replay-safe,
 * like a vendor call: its result is stored and replayed, as Temporal's history would), `rerun` (it checks the stored
 * state first, so running it again is safe and its result need not be stored), or `self-recorded` (it stores its own
 * result, keyed by its input, and returns it when run again, like an MCP tool call: not recorded by the engine, and,
 * unlike `rerun`, no proof that the steps before it were stored).
 */
export type StepPolicy = 'record' | 'rerun' | 'self-recorded';

/**
 * Where the Temporal wrapper schedules an activity (temporal-context.ts): `generation` for the long calls to vendors
 * and remote servers (heartbeating, cancelled with the workflow, on the workflow's queue, which has the worker's
 * generation slots), `start` for the job's start (on the workflow's queue: waiting for a slot is what `queued`
 * means), `bookkeeping` for the short database steps (on their own queue, never held up by a full worker).
 */
export type ActivityLane = 'generation' | 'start' | 'bookkeeping';

/** One activity of a flow: how each engine treats it. */
export interface FlowStep {
  readonly onRerun: StepPolicy;
  readonly lane: ActivityLane;
}

/**
 * A durable flow as both engines run it, declared once in its `*.flow.ts` file (bundle-safe: no Node imports).
 * The embedded engine runs `run` over the activities with the `steps`' policies; the workflow bundle makes one
 * Temporal workflow of it, named `workflowType` (workflows/index.ts, temporal-context.ts temporalWorkflow).
 */
export interface FlowDefinition<Activities, Input> {
  /** The Temporal workflow type: a durable name (renaming it breaks running workflows). */
  readonly workflowType: string;
  /** The flow's input for the job of a resource (plain JSON: it enters Temporal history). */
  readonly input: (resourceId: string) => Input;
  /** The engine-neutral flow; it returns the resource's final status. */
  readonly run: (context: FlowContext<Activities>, input: Input) => Promise<string>;
  /**
   * The kind's failure ending: after the last attempt failed (embedded) or a step ran out of retries (Temporal), end
   * the resource cleanly (failed) so that nothing waits on it forever.
   */
  readonly abandon: (activities: Activities, input: Input) => Promise<string>;
  /** Every activity the flow calls, by its durable name (rename only with a versioning plan). */
  readonly steps: { readonly [Name in keyof Activities]: FlowStep };
  /** The signals that wake its `sleep` (FlowContext.sleep). */
  readonly wakeSignals?: readonly WakeSignal[];
  /** A cancel while it waits for its start ends it at once (FlowContext.abandonable), on versioned workflows. */
  readonly abandonableStart: boolean;
  /** Temporal attempts of its generation activities, when not the default (temporal-context.ts GENERATION_ACTIVITY). */
  readonly generationAttempts?: number;
}

/** A FlowDefinition, recognised among a module's exports (the bundle entry collects them, workflows/index.ts). */
export function isFlowDefinition(value: unknown): value is FlowDefinition<unknown, unknown> {
  const candidate = value as Partial<FlowDefinition<unknown, unknown>> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.workflowType === 'string' &&
    typeof candidate.run === 'function' &&
    typeof candidate.steps === 'object'
  );
}
