import { submitToolOutputsSignal } from './definitions';
import type { FlowContext } from './flow-context';
import type { FlowDefinition } from './flow-definition';
import { routeCalls, type RouteFailover, type RoutePlan, type RouteTarget } from './route-steps';

/** Shapes exchanged between the Run flow and its activities (plain JSON: they enter Temporal history). */
export interface RunJobInput {
  runId: string;
}

/** Vendor calls of one Run at most: each round that asks for tools costs the client a round trip. */
export const MAX_RUN_ROUNDS = 16;

export type ModelOutcome =
  | {
      kind: 'tool_calls';
      calls: Array<{ id: string; name: string; arguments: string }>;
      inputTokens: number;
      outputTokens: number;
      /** A Run on a route: the target that served the call (its price and name are billed; api-decisions 32). */
      model?: string;
    }
  | {
      kind: 'message';
      status: 'completed' | 'incomplete';
      text: string;
      inputTokens: number;
      outputTokens: number;
      model?: string;
    }
  | { kind: 'failed'; code: string; message: string; inputTokens: number; outputTokens: number; model?: string }
  /** The Run was cancelled before or during the call (nothing more to bill than `finalizeRun` is told). */
  | { kind: 'cancelled' };

/** What a call to one of a route's targets answers: a model outcome, or a failover to the next target. */
export type TargetOutcome = ModelOutcome | RouteFailover;

/**
 * The change that made a route's plan and each failover steps of a Run's job of their own (api-decisions 32), as a
 * Response's are. A Run that started before it fails over within its callModel step, and replays so.
 */
export const RUN_ROUTE_STEPS = 'run-route-steps';

/** What a Run ends with: a model outcome, or its wait for tool outputs ran out. */
export type RunEnding = Exclude<ModelOutcome, { kind: 'tool_calls' }> | { kind: 'expired' };

/** Where a Run in requires_action stands: still waiting (for `remainingMs` more), outputs submitted, or over. */
export type ToolOutputsState =
  { state: 'waiting'; remainingMs: number } | { state: 'submitted' } | { state: 'expired' } | { state: 'ended' };

/** Activity names are durable (they are recorded in histories): rename only with a versioning plan. */
export interface RunActivities {
  /**
   * queued → in_progress; false when the Run was cancelled (or finished) before it started. A re-run finds it started:
   * true. `route`: it names a route.
   */
  startRun(input: RunJobInput): Promise<{ proceed: boolean; route?: boolean }>;
  /** A route's targets in order, from a random draw: recorded, so a replay or a re-run never draws again. */
  planRunRoute(input: RunJobInput): Promise<RoutePlan>;
  /**
   * The vendor call of round `round` over the thread's messages and the Run's transcript (a route's: to `target`,
   * a failover outcome when it fails before answering and another target follows). A round whose outcome is
   * already stored (a re-run) answers it without calling the vendor again.
   */
  callModel(input: RunJobInput & { round: number; target?: RouteTarget }): Promise<TargetOutcome>;
  /** Bills the round, stores its tool calls and `required_action`, in_progress → requires_action. Idempotent. */
  requireAction(
    input: RunJobInput & { round: number; outcome: Extract<ModelOutcome, { kind: 'tool_calls' }> },
  ): Promise<ToolOutputsState>;
  /** After a wake or the deadline: whether the outputs of round `round` arrived, or the wait ran out. */
  collectToolOutputs(input: RunJobInput & { round: number }): Promise<ToolOutputsState>;
  /** Bills the last round, appends the assistant's message, final status. Idempotent. */
  finalizeRun(input: RunJobInput & { round: number; ending: RunEnding }): Promise<{ status: string }>;
}

/**
 * One durable run of a legacy Run: call the model; while it asks for tools, stop in requires_action until the
 * client submits their outputs (a signal), cancels, or 10 minutes pass (expired); then the final message.
 */
export async function runFlow(ctx: FlowContext<RunActivities>, input: RunJobInput): Promise<string> {
  const { activities } = ctx;
  const ending = await run(ctx, input);
  const final = await ctx.nonCancellable(() =>
    activities.finalizeRun({ ...input, round: ending.round, ending: ending.ending }),
  );
  ctx.setStatus(final.status);
  return final.status;
}

async function run(ctx: FlowContext<RunActivities>, input: RunJobInput): Promise<{ round: number; ending: RunEnding }> {
  const { activities } = ctx;
  const cancelled = { kind: 'cancelled' } as const;
  // A Run cancelled while it waits for a worker (queued) ends at once, not when a worker is free.
  const start = ctx.cancelRequested()
    ? { proceed: false }
    : await ctx.abandonable(() => activities.startRun(input), { proceed: false });
  if (!start.proceed) return { round: 0, ending: cancelled };
  const callModel = modelCalls(ctx, input, start.route === true);
  for (let round = 0; round < MAX_RUN_ROUNDS; round++) {
    if (ctx.cancelRequested()) return { round, ending: cancelled };
    ctx.setStatus('in_progress');
    let outcome: ModelOutcome;
    try {
      outcome = await callModel(round);
    } catch (err) {
      if (ctx.isCancellation(err)) return { round, ending: cancelled };
      // Infrastructure failure that outlived the activity's retries: end the Run cleanly.
      const message = 'The Run could not be completed; create it again.';
      return {
        round,
        ending: { kind: 'failed', code: 'run.execution_failed', message, inputTokens: 0, outputTokens: 0 },
      };
    }
    if (outcome.kind !== 'tool_calls') return { round, ending: outcome };

    let wait = await ctx.nonCancellable(() => activities.requireAction({ ...input, round, outcome }));
    ctx.setStatus('requires_action');
    while (wait.state === 'waiting' && !ctx.cancelRequested()) {
      await ctx.sleep(wait.remainingMs, submitToolOutputsSignal);
      if (ctx.cancelRequested()) break;
      wait = await ctx.nonCancellable(() => activities.collectToolOutputs({ ...input, round }));
    }
    // The round is billed: the ending carries no tokens of its own.
    if (ctx.cancelRequested() || wait.state === 'ended') return { round: round + 1, ending: cancelled };
    if (wait.state === 'expired') return { round: round + 1, ending: { kind: 'expired' } };
  }
  const message = `The model asked for tools in ${MAX_RUN_ROUNDS} rounds without answering; the Run stops there.`;
  return {
    round: MAX_RUN_ROUNDS,
    ending: { kind: 'failed', code: 'run.too_many_rounds', message, inputTokens: 0, outputTokens: 0 },
  };
}

/** The failure ending of a Run whose job cannot go on (as endResponseFailed): failed, so its thread takes other Runs. */
export async function endRunFailed(activities: RunActivities, input: RunJobInput): Promise<string> {
  const ending = {
    kind: 'failed',
    code: 'run.execution_failed',
    message: 'The Run could not be processed; create it again.',
    inputTokens: 0,
    outputTokens: 0,
  } as const;
  // Round 0's key: an abandoned Run bills nothing here (no tokens), so the key is never used.
  return (await activities.finalizeRun({ runId: input.runId, round: 0, ending })).status;
}

/**
 * The model calls of a Run. A model's: one callModel each. A route's (api-decisions 32): through its targets
 * (routeCalls), its plan and each failover recorded steps, so a crash mid-call resumes on the target reached and the
 * round (keyed by its number) is billed once; in a Run from before RUN_ROUTE_STEPS, one callModel that fails over
 * within itself.
 */
function modelCalls(
  ctx: FlowContext<RunActivities>,
  input: RunJobInput,
  route: boolean,
): (round: number) => Promise<ModelOutcome> {
  const { activities } = ctx;
  if (!route || !ctx.patched(RUN_ROUTE_STEPS))
    return (round) => ctx.cancellable(() => activities.callModel({ ...input, round })) as Promise<ModelOutcome>;
  const calls = routeCalls(
    ctx,
    () => activities.planRunRoute(input),
    (round: number, target) => activities.callModel({ ...input, round, target }),
  );
  return (round) => calls.call(round);
}

/** A legacy Run's durable flow: one workflow per Run, `run/<Run id>` (src/threads/run.job.ts). */
export const runFlowDefinition: FlowDefinition<RunActivities, RunJobInput> = {
  workflowType: 'runWorkflow',
  input: (runId) => ({ runId }),
  run: runFlow,
  // A step out of retries ends the Run failed instead of leaving it active for good (its thread would take no
  // other Run).
  abandon: endRunFailed,
  steps: {
    // Guarded by the stored status: a second run changes nothing.
    startRun: { onRerun: 'rerun', lane: 'start' },
    // A route's draw: a re-run replays it, never draws again (api-decisions 32).
    planRunRoute: { onRerun: 'record', lane: 'bookkeeping' },
    // The vendor call. Its outcome is also stored by the next step (requireAction or finalizeRun), and a re-run of a
    // round whose outcome is stored answers it without calling again. A route's failover outcome is recorded here
    // only, so a re-run goes on from the next target.
    callModel: { onRerun: 'record', lane: 'generation' },
    // Guarded by the Run's round counter and status; the debit by its operation key.
    requireAction: { onRerun: 'rerun', lane: 'bookkeeping' },
    collectToolOutputs: { onRerun: 'rerun', lane: 'bookkeeping' },
    finalizeRun: { onRerun: 'rerun', lane: 'bookkeeping' },
  },
  // A wake-up: the outputs are in the database.
  wakeSignals: [submitToolOutputsSignal],
  abandonableStart: true,
};
