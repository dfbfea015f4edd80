import { recordJobFinished, type Metrics } from '../metrics/metrics';
import { holdForGeneration, outputCapOf } from '../billing/generation-hold';
import type { Ledger } from '../billing/ledger';
import { priceCall } from '../billing/pricing';
import type { CatalogModel } from '../catalog/catalog-types';
import { inTransaction, type Db } from '../db/database';
import { abortError, currentActivityContext, type ActivityContext } from '../engine/activity-context';
import { ApiError } from '../errors';
import type { Logger } from '../logger';
import type { GenerateTextRequest, LanguageModel } from '../providers/provider';
import { vendorFailureOf } from '../providers/provider-errors';
import { promptTokenBound } from '../responses/prompt';
import { buildRunPrompt } from './run-prompt';
import {
  loadRun,
  markExpired,
  markFinal,
  markRequiresAction,
  markRoundBilled,
  markStarted,
  readWait,
} from './runs.repository';
import { isActiveRunStatus, runRoundOperationKey, type RunRow, type RunUsage } from './runs.table';
import { findThread, insertMessages } from './threads.repository';
import type {
  ModelOutcome,
  RunActivities,
  RunEnding,
  RunJobInput,
  TargetOutcome,
  ToolOutputsState,
} from '../../workflows/run.flow';
import type { RoutePlan, RouteTarget } from '../../workflows/route-steps';
import { circuitsOf } from '../routing/circuits';
import { countServed, targetFailovers } from '../routing/failover';
import type { Catalog } from '../catalog/catalog.service';
import { callWithFailover } from '../routing/failover-call';
import { drawRoutePlan, type RouteCatalog } from '../routing/route-plan';

export interface RunActivityDeps {
  db: Db;
  logger: Logger;
  metrics?: Metrics;
  catalog: RouteCatalog & Pick<Catalog, 'resolveModel'>;
  providers: { languageModel(vendor: string): LanguageModel };
  /** The ledger of the process; one over `db` when absent. */
  ledger: Ledger;
  /** How long a Run waits in requires_action before it expires (default 10 minutes). */
  requiresActionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
}

const REQUIRES_ACTION_TIMEOUT_MS = 10 * 60_000;

/** The activities of a Run's workflow: each reads the Run, does one thing, and stores the result. */
export function createRunActivities(deps: RunActivityDeps): RunActivities {
  const { db, logger } = deps;
  const { ledger } = deps;
  const timeoutMs = deps.requiresActionTimeoutMs ?? REQUIRES_ACTION_TIMEOUT_MS;

  async function startRun({ runId }: RunJobInput) {
    const run = await markStarted(db, runId);
    // A re-run (after a crash, or after a suspension in requires_action) finds it started.
    return {
      // A route's Run: its flow plans the route first (api-decisions 32).
      ...(run && deps.catalog.getRoute(run.model) ? { route: true } : {}),
      proceed:
        run !== undefined &&
        ['in_progress', 'requires_action'].includes(run.status) &&
        run.cancel_requested_at === null,
    };
  }

  /** The draw is made here, in a recorded step: a replay or a re-run reads it back instead of drawing again. */
  async function planRunRoute({ runId }: RunJobInput): Promise<RoutePlan> {
    const run = await loadRun(db, runId);
    return drawRoutePlan(deps.catalog, run?.model ?? '');
  }

  /**
   * `passedContext`: the embedded engine's (cancellation, heartbeat); under Temporal, Temporal's Context. `target`: a
   * route's target the flow chose (a Run from before RUN_ROUTE_STEPS fails over within this call instead).
   */
  async function callModel(
    { runId, round, target }: RunJobInput & { round: number; target?: RouteTarget },
    passedContext?: ActivityContext,
  ): Promise<TargetOutcome> {
    const context = currentActivityContext(passedContext);
    const run = await loadRun(db, runId);
    if (!run || !isActiveRunStatus(run.status) || run.cancel_requested_at) return { kind: 'cancelled' };
    // Stored by requireAction: a re-run answers it again (its tokens are billed already).
    const stored = run.transcript[round];
    if (stored)
      return {
        kind: 'tool_calls',
        calls: stored.calls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })),
        inputTokens: 0,
        outputTokens: 0,
      };
    // A route's Run (api-decisions 32): its call goes to the route's targets, the one that served named in the outcome.
    const model = deps.catalog.resolveModel(run.model);
    if (!model) return failed('model.not_found', `Model ${run.model} is no longer in the catalog.`);
    const prompt = await buildRunPrompt(db, run, model.contextWindow);
    if (!prompt.fits) {
      return failed(
        'run.context_length_exceeded',
        `The thread's newest message does not fit the context window of ${model.code} (${model.contextWindow}) beside the Run's instructions.`,
      );
    }
    const tools = run.request.tools;
    const call: GenerateTextRequest = {
      model: model.upstreamId,
      instructions: prompt.instructions,
      items: prompt.items,
      tools:
        tools.length > 0
          ? tools.map((tool) => ({
              name: tool.name,
              description: tool.description,
              parameters: tool.parameters ?? { type: 'object', properties: {} },
            }))
          : undefined,
      parallelToolCalls: tools.length > 0 ? run.request.parallel_tool_calls : undefined,
      temperature: run.request.temperature ?? undefined,
      topP: run.request.top_p ?? undefined,
      maxOutputTokens: run.request.max_completion_tokens ?? undefined,
      reasoningEffort: run.request.reasoning_effort ?? undefined,
      signal: context.signal,
    };
    // Each round holds for its own call (the first round's hold was placed with the Run); its debit settles it.
    try {
      call.maxOutputTokens = await holdForGeneration(ledger, {
        accountId: run.account_id,
        operationKey: runRoundOperationKey(run.id, round),
        jobId: run.id,
        price: model.price,
        inputBound: promptTokenBound(call),
        cap: outputCapOf(run.request.max_completion_tokens, model.maxOutput),
        capFixed: false,
      });
    } catch (error) {
      if (ApiError.isInstance(error) && error.status === 402)
        return failed(
          'organization.payment_required',
          'The available balance does not pay for the next model call of this Run.',
        );
      throw error;
    }
    // A route's target the flow chose (api-decisions 32): skipped at once while its vendor's circuit is open.
    const chosen = target ? deps.catalog.getModel(target.model) : undefined;
    if (target && !chosen) return failed('model.not_found', `Model ${target.model} is no longer in the catalog.`);
    const circuits = circuitsOf(deps.providers);
    const failovers = chosen
      ? targetFailovers({ metrics: deps.metrics, circuits }, { route: run.model, model: chosen, next: target!.next })
      : undefined;
    const skipped = failovers?.skipped();
    if (skipped) return skipped;
    /** One target, without the adapter's retries when another follows (the next vendor is the retry). */
    const callTarget = async (each: CatalogModel, { next }: RouteTarget) => {
      const result = await deps.providers
        .languageModel(each.vendor)
        .generateText({ ...call, model: each.upstreamId, ...(next ? { maxRetries: 0 } : {}) });
      circuits.success(each.vendor);
      countServed(deps.metrics, run.model, each.code);
      return result;
    };
    const heartbeat = setInterval(() => context.heartbeat({ round }), deps.heartbeatIntervalMs ?? 2000);
    try {
      const { result, served } = chosen
        ? { result: await callTarget(chosen, target!), served: chosen }
        : await callWithFailover(model, deps, ({ target: each, maxRetries }) =>
            deps.providers
              .languageModel(each.vendor)
              .generateText({ ...call, model: each.upstreamId, ...(maxRetries === undefined ? {} : { maxRetries }) }),
          );
      if (context.signal.aborted) throw abortError();
      const tokens = {
        inputTokens: result.usage.inputTokens,
        outputTokens: result.usage.outputTokens,
        ...(model.route ? { model: served.code } : {}),
      };
      if (result.toolCalls.length > 0) {
        const calls = run.request.parallel_tool_calls ? result.toolCalls : result.toolCalls.slice(0, 1);
        return {
          kind: 'tool_calls',
          calls: calls.map((tool) => ({ id: tool.callId, name: tool.name, arguments: tool.arguments })),
          ...tokens,
        };
      }
      // Cut short by the output cap or the vendor's content filter: the answer is partial (or empty).
      const cut = result.finishReason === 'length' || result.finishReason === 'content_filter';
      return { kind: 'message', status: cut ? 'incomplete' : 'completed', text: result.text, ...tokens };
    } catch (error) {
      if (context.signal.aborted) throw abortError();
      // A route's target that failed before answering, with another after it: the flow calls that one at once.
      const failover = failovers?.failed(error);
      if (failover) return failover;
      const failure = vendorFailureOf(error, 'run');
      if (!failure) throw error;
      logger.warn({ runId, err: error }, 'vendor call failed');
      return failed(failure.code, failure.message);
    } finally {
      clearInterval(heartbeat);
    }
  }

  async function requireAction({
    runId,
    round,
    outcome,
  }: RunJobInput & {
    round: number;
    outcome: Extract<ModelOutcome, { kind: 'tool_calls' }>;
  }): Promise<ToolOutputsState> {
    const run = await loadRun(db, runId);
    if (!run) return { state: 'ended' };
    const { usage, exact } = addUsage(run, outcome.inputTokens, outcome.outputTokens, outcome.model);
    await inTransaction(db, async (trx) => {
      const marked = await markRequiresAction(trx, {
        id: runId,
        round,
        calls: { calls: outcome.calls },
        requiredAction: {
          type: 'submit_tool_outputs',
          submit_tool_outputs: {
            tool_calls: outcome.calls.map((call) => ({
              id: call.id,
              type: 'function',
              function: { name: call.name, arguments: call.arguments },
            })),
          },
        },
        usage,
        timeoutMs,
      });
      // Cancelled meanwhile: the calls are not stored, but the tokens the vendor reported are billed.
      const billed = marked ?? (await markRoundBilled(trx, { id: runId, round, usage }));
      // Also a cost of 0: the debit then releases the round's hold.
      if (billed)
        await ledger.debit(
          debitOf(billed, round, exact, outcome, outcome.model ? deps.catalog.getModel(outcome.model) : undefined),
          trx,
        );
    });
    // Also when nothing was written: a re-run after it was, or the Run moved on (outputs submitted, cancelled).
    return settleWait(runId, round);
  }

  async function collectToolOutputs({ runId, round }: RunJobInput & { round: number }): Promise<ToolOutputsState> {
    return settleWait(runId, round);
  }

  /**
   * Where the wait after round `round` stands. A wait that has run out is ended here, by a write guarded like the
   * submission's (markExpired): a submission that wins the race is answered `submitted`, never left behind.
   */
  async function settleWait(runId: string, round: number): Promise<ToolOutputsState> {
    const state = waitState(await readWait(db, runId), round);
    if (state.state !== 'expired' || (await markExpired(db, runId, round))) return state;
    return waitState(await readWait(db, runId), round);
  }

  /**
   * The final status, the last round's debit and (for an answer) the assistant's message, in one transaction. A
   * cancel asked before the end wins over an answer: the Run ends cancelled, its tokens billed, nothing appended.
   */
  async function finalizeRun({
    runId,
    round,
    ending,
  }: RunJobInput & { round: number; ending: RunEnding }): Promise<{ status: string }> {
    const tokens = ending.kind === 'message' || ending.kind === 'failed' ? ending : { inputTokens: 0, outputTokens: 0 };
    const billed = tokens.inputTokens + tokens.outputTokens > 0;
    const error =
      ending.kind === 'failed'
        ? { code: ending.code, message: ending.message }
        : ending.kind === 'expired'
          ? { code: 'run.expired', message: 'The tool outputs were not submitted in time.' }
          : null;
    // A second pass only when a cancel arrived between the read and the write (markFinal refuses an answer then).
    for (let pass = 0; pass < 2; pass++) {
      const run = await loadRun(db, runId);
      if (!run) return { status: 'cancelled' };
      if (!isActiveRunStatus(run.status)) return { status: run.status };
      const answered = ending.kind === 'message' ? ending.status : ending.kind;
      const status = run.cancel_requested_at && answered !== 'failed' ? 'cancelled' : answered;
      const served = ending.kind === 'message' || ending.kind === 'failed' ? ending.model : undefined;
      const { usage, exact } = addUsage(run, tokens.inputTokens, tokens.outputTokens, served);
      const final = await inTransaction(db, async (trx) => {
        const marked = await markFinal(trx, {
          id: runId,
          status,
          rounds: billed ? round + 1 : run.rounds,
          usage: billed || run.usage ? usage : null,
          error: status === 'cancelled' ? null : error,
        });
        if (!marked) return undefined;
        await ledger.debit(
          debitOf(marked, round, exact, tokens, served ? deps.catalog.getModel(served) : undefined),
          trx,
        );
        // The thread may have been deleted while the Run ran: then there is nothing to append to. An empty answer
        // appends nothing either (vendors refuse empty text in a later prompt).
        if (
          ending.kind === 'message' &&
          ending.text !== '' &&
          status !== 'cancelled' &&
          (await findThread(trx, run.account_id, run.thread_id))
        ) {
          await insertMessages(trx, {
            threadId: run.thread_id,
            accountId: run.account_id,
            messages: [
              {
                id: `msg_${runId.slice(4)}`,
                role: 'assistant',
                content: [{ type: 'text', text: ending.text }],
                runId,
                assistantId: run.assistant_id,
              },
            ],
          });
        }
        return marked;
      });
      if (final) {
        recordJobFinished(deps.metrics, 'run', final.status, deps.catalog.getModel(final.model));
        return { status: final.status };
      }
    }
    const current = await loadRun(db, runId);
    // Still active after both passes: fail the attempt (retried, then abandoned) rather than leave the Run active.
    if (current && isActiveRunStatus(current.status))
      throw new Error(`Run ${runId} is still ${current.status} after its finalisation.`);
    return { status: current?.status ?? 'cancelled' };
  }

  /**
   * The Run's usage with this call's tokens added, and the exact cost to debit for them: at the price of `served`, the
   * route's target that made the call (a route's own price, its dearest target's, when none did).
   */
  function addUsage(
    run: RunRow,
    inputTokens: number,
    outputTokens: number,
    served?: string,
  ): { usage: RunUsage; exact: string } {
    const priced = served ? deps.catalog.getModel(served) : deps.catalog.resolveModel(run.model);
    const { cost, exact } = priceCall(priced?.price ?? null, {
      input: inputTokens,
      output: outputTokens,
    });
    const before = run.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost: 0 };
    return {
      usage: {
        prompt_tokens: before.prompt_tokens + inputTokens,
        completion_tokens: before.completion_tokens + outputTokens,
        total_tokens: before.total_tokens + inputTokens + outputTokens,
        cost: before.cost + cost,
      },
      exact,
    };
  }

  return { startRun, planRunRoute, callModel, requireAction, collectToolOutputs, finalizeRun };
}

/** One debit per vendor call (api-decisions 10): its round is in the operation key, so a retry never bills twice. */
function debitOf(
  run: RunRow,
  round: number,
  cost: string,
  tokens: { inputTokens: number; outputTokens: number },
  /** A route's Run: the target that made the call. */
  served?: CatalogModel,
) {
  return {
    accountId: run.account_id,
    cost,
    operationKey: runRoundOperationKey(run.id, round),
    metadata: {
      source: 'api',
      vendor: served?.vendor ?? run.vendor,
      model: served?.code ?? run.model,
      ...(served ? { route: run.model } : {}),
      service: 'runs',
      run_id: run.id,
    },
    usage: {
      prompt_tokens: tokens.inputTokens,
      completion_tokens: tokens.outputTokens,
      total_tokens: tokens.inputTokens + tokens.outputTokens,
    },
  };
}

/**
 * Where the wait after round `round` stands, from the stored Run. Expiry is decided by the database's clock (as
 * submissions are refused by it); the flow is handed the time left by that clock, not a deadline of another.
 */
function waitState(
  run: { status: string; rounds: number; remaining_ms: number | null } | undefined,
  round: number,
): ToolOutputsState {
  if (!run) return { state: 'ended' };
  // A later round exists: this round's outputs were submitted and the Run went on. Read by a re-run of the job
  // that reached this step late (after a suspension or a takeover), which must follow the Run, not end it.
  if (run.rounds > round + 1) return { state: 'submitted' };
  if (run.status === 'requires_action' && run.rounds === round + 1) {
    const remaining = Number(run.remaining_ms ?? 0);
    return remaining > 0 ? { state: 'waiting', remainingMs: Math.ceil(remaining) } : { state: 'expired' };
  }
  if (run.status === 'in_progress' && run.rounds > round) return { state: 'submitted' };
  return { state: 'ended' };
}

function failed(code: string, message: string): Extract<ModelOutcome, { kind: 'failed' }> {
  return { kind: 'failed', code, message, inputTokens: 0, outputTokens: 0 };
}
