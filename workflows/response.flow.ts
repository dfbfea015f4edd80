import { callCompletionEvents, completeCalls, listingEvents, type PendingEvent } from '../src/mcp/mcp-tools';
import type { McpCallRequest, McpCallResult, McpListing, McpServerTools } from '../src/mcp/mcp-types';
import type { FlowContext } from './flow-context';
import type { FlowDefinition } from './flow-definition';
import { routeCalls, type RouteCalls, type RouteFailover, type RoutePlan, type RouteTarget } from './route-steps';

export type { RoutePlan, RouteTarget };

/** Shapes exchanged between the response flow and its activities (plain JSON: they enter Temporal history). */
export interface ResponseJobInput {
  responseId: string;
}

/** `response.created` is 0 and `response.in_progress` 1: output starts at 2 (src/responses/response-events.ts). */
const FIRST_OUTPUT_SEQUENCE = 2;

/** MCP rounds (model turns whose MCP calls are run) before a last turn in which MCP tools are no longer offered. */
export const MAX_MCP_ROUNDS = 16;

/** A later model turn of a Response with MCP tools: what the turns before it produced. */
export interface GenerationRound {
  /** 0 for the first turn. */
  index: number;
  /** Output items so far (wire form): listings, earlier text, finished MCP calls. */
  output: unknown[];
  /** Where this turn's events start: the events before are stored. */
  nextSequence: number;
  /** Events this turn stores first (the listings, the previous turn's call results). */
  pendingEvents: PendingEvent[];
  /** The tools each MCP server offers this Response. */
  mcpServers: McpServerTools[];
  /** The last turn after MAX_MCP_ROUNDS: MCP tools are not offered, so the model answers. */
  mcpToolsOff: boolean;
  /** Tokens of the turns before (billed with the Response): the billing hold must cover them and this turn. */
  billed?: { inputTokens: number; outputTokens: number };
}

export type GenerationOutcome =
  | {
      kind: 'generated';
      /** A Response to a route: the target that served it (its price and name are billed). */
      model?: string;
      status: 'completed' | 'incomplete';
      /** Output items in wire form. */
      output: unknown[];
      inputTokens: number;
      outputTokens: number;
      incompleteReason?: string;
      /** The sequence number after the last event of the generation (stored or in `unwrittenEvents`). */
      nextSequence: number;
      /**
       * The generation's last events (the closing `done` events), not yet stored: finalizeResponse stores them
       * with the final event, in its one statement. Small by construction (bounded by callProvider).
       */
      unwrittenEvents?: unknown[];
      /** MCP calls the model asked for in this turn (their items are in `output`, in progress); every event is stored. */
      mcpCalls?: McpCallRequest[];
      /** The turn also called a client-side function: after its MCP calls the Response ends. */
      functionCalled?: boolean;
    }
  | {
      kind: 'failed';
      /** A Response to a route: the target that failed last. */
      model?: string;
      code: string;
      message: string;
      inputTokens: number;
      outputTokens: number;
      nextSequence?: number;
      /** Events live readers may have seen that could not be stored then; finalizeResponse stores them. */
      unwrittenEvents?: unknown[];
    }
  /** Token counts only when earlier turns of an MCP loop finished before the cancel: they are billed. */
  | { kind: 'cancelled'; inputTokens?: number; outputTokens?: number; model?: string }
  /** A route's target failed before its first output; the flow calls the next target (route-steps.ts). */
  | RouteFailover;

/** What a generation ends with (a failover is never final). */
export type FinalOutcome = Exclude<GenerationOutcome, { kind: 'failover' }>;

export interface FinalizeResult {
  status: string;
  webhook: boolean;
}

/**
 * A Response's start: queued → in_progress; `proceed` false when it was cancelled (or finished) before it started.
 * `mcp`: it has MCP tools; `route`: it names a route.
 */
export interface StartResult {
  proceed: boolean;
  mcp?: boolean;
  route?: boolean;
}

/** Activity names are durable (they are recorded in histories): rename only with a versioning plan. */
export interface ResponseActivities {
  /** The start alone (workflows from before START_IN_CALL). */
  startResponse(input: ResponseJobInput): Promise<StartResult>;
  /**
   * The start, then, for a plain model's Response (no MCP tools, no route), its vendor call as callProvider makes it:
   * `outcome`. Without `outcome` the flow goes on from the start's answer (it did not proceed, or has MCP tools or a
   * route, whose steps come first).
   */
  startAndCallProvider(input: ResponseJobInput): Promise<{ start: StartResult; outcome?: GenerationOutcome }>;
  /** A route's targets in order, from a random draw: recorded, so a replay or a re-run never draws again. */
  planRoute(input: ResponseJobInput): Promise<RoutePlan>;
  /** The tools of each MCP server of the request (reusing a listing found in the conversation or chain). */
  listMcpTools(input: ResponseJobInput): Promise<McpListing>;
  /** Calls the vendor (a route's `target`), streaming events to the event log; vendor failures come back as an outcome. */
  callProvider(input: ResponseJobInput & { round?: GenerationRound; target?: RouteTarget }): Promise<GenerationOutcome>;
  /** One MCP tool call, at most once (its start and result are stored); a failure comes back as its result. */
  callMcpTool(input: ResponseJobInput & { call: McpCallRequest }): Promise<McpCallResult>;
  /** All at once (one statement; with a conversation append, one transaction): final status, output, usage, debit, final event. Idempotent. */
  finalizeResponse(input: ResponseJobInput & { outcome: FinalOutcome }): Promise<FinalizeResult>;
  /** One-shot webhook to metadata.webhook_url (at most once, outcome recorded). */
  sendWebhook(input: ResponseJobInput): Promise<void>;
}

/**
 * The patch of workflows whose start rides in their first vendor call's activity (`startAndCallProvider`): one
 * activity dispatch and one workflow task fewer before the first token (bench/README.md, 2026-12-01). Histories
 * recorded before it have no marker and replay as they ran (startResponse, then callProvider).
 */
export const START_IN_CALL = 'start-in-call';

/** One durable run of a Response: start, generate (cancellable), finalise (not cancellable), notify. */
export async function responseFlow(ctx: FlowContext<ResponseActivities>, input: ResponseJobInput): Promise<string> {
  const { activities } = ctx;
  let outcome: FinalOutcome = { kind: 'cancelled' };
  // A Response cancelled while it waits for a worker (queued) is finalised at once, not when a worker is free.
  if (!ctx.cancelRequested() && ctx.patched(START_IN_CALL)) {
    // Its status is in_progress from here: the start and the first call are one step, which a cancel reaches like any
    // vendor call (one still waiting for a worker's slot is cancelled at once, and starts nothing).
    ctx.setStatus('in_progress');
    let first: { start: StartResult; outcome?: GenerationOutcome } = { start: { proceed: false } };
    try {
      first = await ctx.cancellable(() => activities.startAndCallProvider(input));
    } catch (err) {
      // Cancelled (nothing billed: the non-MCP call's usage is the vendor's loss, as before). Any other failure
      // outlived the step's retries and is the job's, as a failed start always was: the embedded engine runs the job
      // again, Temporal ends it with endResponseFailed.
      if (!ctx.isCancellation(err)) throw err;
    }
    // A plain model's Response: its one model turn is done. One with MCP tools or a route goes on from its start.
    if (first.start.proceed)
      outcome = (first.outcome as FinalOutcome | undefined) ?? (await generation(ctx, input, first.start));
  } else {
    const start: StartResult = ctx.cancelRequested()
      ? { proceed: false }
      : await ctx.abandonable(() => activities.startResponse(input), { proceed: false });
    if (start.proceed && !ctx.cancelRequested()) {
      ctx.setStatus('in_progress');
      outcome = await generation(ctx, input, start);
    }
  }
  const final = await ctx.nonCancellable(() => activities.finalizeResponse({ ...input, outcome }));
  ctx.setStatus(final.status);
  if (final.webhook) await ctx.nonCancellable(() => activities.sendWebhook(input));
  return final.status;
}

/**
 * The model turns of a started Response (an MCP loop, a route's targets, or one call), ending as an outcome to
 * finalise. A cancel ends it cancelled (billing the MCP turns finished before it); a failure that outlived the
 * activity's retries ends it failed.
 */
async function generation(
  ctx: FlowContext<ResponseActivities>,
  input: ResponseJobInput,
  start: StartResult,
): Promise<FinalOutcome> {
  const usage = { inputTokens: 0, outputTokens: 0 };
  const turn = modelTurns(ctx, input, start.route === true);
  try {
    return start.mcp ? await mcpLoop(ctx, input, usage, turn) : await turn.call(undefined);
  } catch (err) {
    if (ctx.isCancellation(err)) {
      const outcome: FinalOutcome =
        usage.inputTokens + usage.outputTokens > 0 ? { kind: 'cancelled', ...usage } : { kind: 'cancelled' };
      return turn.served ? { ...outcome, model: turn.served } : outcome;
    }
    // Infrastructure failure that outlived the activity's retries: end the Response cleanly.
    return {
      kind: 'failed',
      code: 'response.execution_failed',
      message: 'The generation could not be completed; retry the request.',
      ...usage,
    };
  }
}

/**
 * A Response with MCP tools: list each server's tools once, then call the model; while it calls MCP tools,
 * run the calls of its turn concurrently (each an activity that runs at most once) and call it again with
 * the results, at most MAX_MCP_ROUNDS times, then once more without MCP tools. It ends when the model
 * answers in text or calls a client-side function. `usage` sums the turns billed so far (for a cancel).
 */
async function mcpLoop(
  ctx: FlowContext<ResponseActivities>,
  input: ResponseJobInput,
  usage: { inputTokens: number; outputTokens: number },
  turn: ModelTurns,
): Promise<FinalOutcome> {
  const { activities } = ctx;
  const listing = await ctx.cancellable(() => activities.listMcpTools(input));
  let round: GenerationRound = {
    index: 0,
    output: [...listing.items],
    nextSequence: FIRST_OUTPUT_SEQUENCE,
    pendingEvents: listingEvents(listing.items, 0),
    mcpServers: listing.servers,
    mcpToolsOff: false,
  };
  for (;;) {
    const current = round;
    const outcome = await turn.call(current);
    if (outcome.kind === 'cancelled') return outcome;
    usage.inputTokens += outcome.inputTokens;
    usage.outputTokens += outcome.outputTokens;
    if (outcome.kind === 'failed') return { ...outcome, ...usage };
    const { mcpCalls: calls, ...generated } = { ...outcome, ...usage };
    if (!calls?.length) return generated;

    const results = await Promise.all(
      calls.map((call) => ctx.cancellable(() => activities.callMcpTool({ ...input, call }))),
    );
    const output = completeCalls(outcome.output, results);
    const completion = callCompletionEvents(output, results);
    if (outcome.functionCalled) {
      // The client answers the function call with a new Response; the call results close this one.
      const numbered = completion.map((event, offset) => ({
        ...event,
        sequence_number: outcome.nextSequence + offset,
      }));
      return { ...generated, output, unwrittenEvents: numbered, nextSequence: outcome.nextSequence + numbered.length };
    }
    round = {
      index: current.index + 1,
      output,
      nextSequence: outcome.nextSequence,
      pendingEvents: completion,
      mcpServers: current.mcpServers,
      mcpToolsOff: current.index + 1 >= MAX_MCP_ROUNDS,
      billed: { ...usage },
    };
  }
}

type ModelTurns = RouteCalls<GenerationRound | undefined, FinalOutcome>;

/**
 * The model turns of a Response. A model's: one callProvider each, exactly as before routes. A route's (api-decisions
 * 32): through its targets (routeCalls), its plan and each failover recorded steps.
 */
function modelTurns(ctx: FlowContext<ResponseActivities>, input: ResponseJobInput, route: boolean): ModelTurns {
  const { activities } = ctx;
  if (!route) {
    return {
      call: (round) =>
        ctx.cancellable(() => activities.callProvider(round ? { ...input, round } : input)) as Promise<FinalOutcome>,
    };
  }
  return routeCalls(
    ctx,
    () => activities.planRoute(input),
    (round: GenerationRound | undefined, target) =>
      activities.callProvider(round ? { ...input, round, target } : { ...input, target }),
  );
}

/**
 * The failure ending of a Response whose job cannot go on (its steps kept failing): failed, its webhook sent, so it
 * never stays active. Both engines end a job with it: the embedded engine after the last attempt, the Temporal
 * workflow when an activity ran out of retries. Answers the final status.
 */
export async function endResponseFailed(activities: ResponseActivities, input: ResponseJobInput): Promise<string> {
  const outcome = {
    kind: 'failed',
    code: 'response.execution_failed',
    message: 'The Response could not be processed; retry the request.',
    inputTokens: 0,
    outputTokens: 0,
  } as const;
  const final = await activities.finalizeResponse({ responseId: input.responseId, outcome });
  if (final.webhook) await activities.sendWebhook({ responseId: input.responseId });
  return final.status;
}

/** A Response's durable flow: one workflow per Response, `response/<Response id>` (src/responses/response.job.ts). */
export const responseFlowDefinition: FlowDefinition<ResponseActivities, ResponseJobInput> = {
  workflowType: 'responseWorkflow',
  input: (responseId) => ({ responseId }),
  run: responseFlow,
  abandon: endResponseFailed,
  steps: {
    // Guarded by the stored status: a second run changes nothing.
    startResponse: { onRerun: 'rerun', lane: 'start' },
    // The start (as startResponse) and the first vendor call (as callProvider): the call's outcome is recorded.
    startAndCallProvider: { onRerun: 'record', lane: 'generation' },
    // A route's draw: a re-run replays it, never draws again (api-decisions 32).
    planRoute: { onRerun: 'record', lane: 'bookkeeping' },
    // Listed once per Response: a re-run replays the listing (and its item ids). The MCP steps talk to remote
    // servers, heartbeat and are cancelled like the vendor call.
    listMcpTools: { onRerun: 'record', lane: 'generation' },
    // The vendor call: not repeatable (cost, another text), so a re-run replays its recorded outcome.
    callProvider: { onRerun: 'record', lane: 'generation' },
    // At most once by its own record (mcp_calls): a re-run returns the stored result.
    callMcpTool: { onRerun: 'self-recorded', lane: 'generation' },
    // Guarded by the stored status and the debit's operation key.
    finalizeResponse: { onRerun: 'rerun', lane: 'bookkeeping' },
    // At most once: the delivery is claimed (recorded) here and sent by the webhook dispatcher, outside the job's
    // slot (webhooks/webhook-dispatcher.ts); a re-run finds the claim and sends nothing.
    sendWebhook: { onRerun: 'rerun', lane: 'bookkeeping' },
  },
  abandonableStart: true,
};
