import { recordBilled, recordJobFinished, type Metrics } from '../metrics/metrics';
import { holdForGeneration } from '../billing/generation-hold';
import type { Ledger } from '../billing/ledger';
import type { CatalogModel } from '../catalog/catalog-types';
import type { Catalog } from '../catalog/catalog.service';
import { ApiError } from '../errors';
import type { Db } from '../db/database';
import { inTransaction } from '../db/database';
import { createGroupCommit } from '../db/group-commit';
import { abortError, currentActivityContext, type ActivityContext } from '../engine/activity-context';
import type { EventLog } from '../events/event-log';
import { EventWriter } from '../events/event-writer';
import { readInterruptedTurn, type InterruptedTurn } from './interrupted-turn';
import type { StreamEvent } from '../events/stream-event';
import type { Logger } from '../logger';
import type { GenerateTextRequest, LanguageModel } from '../providers/provider';
import { vendorFailureOf } from '../providers/provider-errors';
import { circuitsOf } from '../routing/circuits';
import { countFailover, countServed, failoverReason } from '../routing/failover';
import { drawRoutePlan, type RouteCatalog } from '../routing/route-plan';
import { dropTurnOutput, LiveTurn, syncTurnOutput } from './conversation-turns';
import { finalRecordOf, type FinalRecord } from './finalization';
import { OutputAssembler } from './output-assembler';
import { capOutput } from './output-cap';
import { mcpFunctions } from '../mcp/mcp-tools';
import { buildPrompt, outputItemToPrompt, promptTokenBound, promptTooLongMessage, type Prompt } from './prompt';
import { clientFunctionNames, partsOf, toGenerateTextRequest } from './provider-call';
import { FIRST_OUTPUT_SEQUENCE, inProgressEvent, responseStream } from './response-events';
import { isFinalStatus, type OutputItem } from './response-types';
import {
  loadResponse,
  loadWithNextSequence,
  readStatus,
  startQueuedResponses,
  writeFinalizations,
  type HandedRow,
} from './responses.repository';
import type { ResponseRow } from './responses.table';
import { JobHandoff } from '../engine/job-handoff';
import type { WebhookSender } from '../webhooks/webhook-sender';
import type {
  FinalizeResult,
  FinalOutcome,
  GenerationOutcome,
  GenerationRound,
  ResponseActivities,
  ResponseJobInput,
  RoutePlan,
  RouteTarget,
  StartResult,
} from '../../workflows/response.flow';
import { createMcpActivities, type McpActivityDeps } from '../mcp/mcp.activities';

export interface ResponseActivityDeps extends McpActivityDeps {
  db: Db;
  logger: Logger;
  events: EventLog;
  webhooks: WebhookSender;
  catalog: RouteCatalog & Pick<Catalog, 'resolveModel'>;
  providers: { languageModel(vendor: string): LanguageModel };
  heartbeatIntervalMs?: number;
  /** Rows handed between the steps of a Response in this process (engine/job-handoff.ts). */
  handoff?: JobHandoff;
  /** Raises a Response's billing hold for a turn its creation's hold does not cover. */
  ledger: Pick<Ledger, 'hold'>;
  metrics?: Metrics;
}

/**
 * Closing events up to this size travel in the outcome to finalizeResponse (one write less per Response);
 * larger ones (a long answer repeated in its `done` events) are written by callProvider, to keep workflow
 * histories small.
 */
const MAX_UNWRITTEN_EVENT_CHARS = 128 * 1024;

/** The activities of a Response's workflow: each reads what it needs, does one thing, and stores the result. */
export function createResponseActivities(deps: ResponseActivityDeps): ResponseActivities {
  const { db, events, logger } = deps;

  const mcp = createMcpActivities(deps);

  // Shared with the Responses service when it runs in this process (it hands over Responses it wrote started).
  const handoff = deps.handoff ?? new JobHandoff();

  // Starts of concurrently starting jobs share one statement and one commit (db/group-commit.ts).
  const starts = createGroupCommit<string, ResponseRow | undefined>({
    maxBatch: 200,
    write: async (ids) => {
      const started = await startQueuedResponses(
        db,
        ids,
        Object.fromEntries(ids.map((id) => [id, [inProgressEvent(id)]])),
      );
      const byId = new Map(started.map((row) => [row.id, row]));
      return ids.map((id) => byId.get(id));
    },
  });

  async function startResponse({ responseId }: ResponseJobInput): Promise<StartResult> {
    // Its creator wrote it started and runs it here (a synchronous or streamed Response with a free slot).
    const handed = handoff.take<HandedRow>(responseId);
    if (handed?.startedAtCreation) {
      handoff.put(responseId, { row: handed.row, nextSequence: FIRST_OUTPUT_SEQUENCE });
      return started(handed.row);
    }
    const startedRow = await starts(responseId);
    if (startedRow) {
      handoff.put(responseId, { row: startedRow, nextSequence: FIRST_OUTPUT_SEQUENCE });
      await events.notify(responseStream(responseId), [inProgressEvent(responseId)]);
      return started(startedRow);
    }
    // A re-run after a crash finds it already started; a cancelled or finished one must not run.
    const row = await readStatus(db, responseId);
    if (row?.status !== 'in_progress' || row.cancel_requested_at !== null) return { proceed: false };
    return started(await loadResponse(db, responseId));
  }

  /** `mcp` only when the Response has MCP tools: the result of any other Response is what it always was. */
  const started = (row: ResponseRow): StartResult => ({
    proceed: true,
    ...(row.request.tools.some((tool) => tool.type === 'mcp') ? { mcp: true } : {}),
    // A route's Response: its flow plans the route first (api-decisions 32).
    ...(deps.catalog.getRoute(row.model) ? { route: true } : {}),
  });

  /** The draw is made here, in a recorded step: a replay or a re-run reads it back instead of drawing again. */
  async function planResponseRoute({ responseId }: ResponseJobInput): Promise<RoutePlan> {
    const row = await loadResponse(db, responseId);
    return drawRoutePlan(deps.catalog, row.model);
  }

  /**
   * The Response and the sequence number its output starts at: as startResponse left them, or read. Only a
   * first attempt trusts the handed-over sequence: an earlier attempt (here or, under Temporal, on another
   * worker) may have written events since.
   */
  async function loadForGeneration(
    responseId: string,
    attempt: number,
  ): Promise<{ row: ResponseRow; nextSequence: number }> {
    const handed = handoff.take<HandedRow>(responseId);
    if (handed?.nextSequence !== undefined && attempt === 1)
      return { row: handed.row, nextSequence: handed.nextSequence };
    return loadWithNextSequence(db, responseId);
  }

  /**
   * The output cap of a turn, within the Response's billing hold: the one its creation held for, when the turn's
   * prompt is within the input bound held then; otherwise (the conversation grew since, a later turn of an MCP
   * loop) the hold is raised first, lowering the cap to what the balance pays ('unpaid': not even one token).
   * Undefined for a Response from before holds.
   */
  async function turnOutputCap(
    row: ResponseRow,
    model: CatalogModel,
    call: GenerateTextRequest,
    round: GenerationRound | undefined,
  ): Promise<number | 'unpaid' | undefined> {
    const held = row.request.hold;
    if (!held) return undefined;
    const inputBound = promptTokenBound(call);
    const prior = round?.billed;
    if (!prior && inputBound <= held.input_tokens) return held.output_tokens;
    try {
      return await holdForGeneration(deps.ledger, {
        accountId: row.account_id,
        operationKey: `response:${row.id}`,
        jobId: row.id,
        price: model.price,
        inputBound,
        cap: held.output_tokens,
        capFixed: false,
        prior,
      });
    } catch (error) {
      if (ApiError.isInstance(error) && error.status === 402) return 'unpaid';
      throw error;
    }
  }

  /** Whether a route's target continues an assistant reply it is given (LanguageModel.continuesReplies). */
  function continuesReplies(code: string): boolean {
    const model = deps.catalog.getModel(code);
    try {
      return model !== undefined && deps.providers.languageModel(model.vendor).continuesReplies === true;
    } catch {
      return false; // its vendor is not configured any more
    }
  }

  /** `passedContext`: the embedded engine's (cancellation, heartbeat); under Temporal, Temporal's Context. */
  async function callProvider(
    { responseId, round, target }: ResponseJobInput & { round?: GenerationRound; target?: RouteTarget },
    passedContext?: ActivityContext,
  ): Promise<GenerationOutcome> {
    const context = currentActivityContext(passedContext);
    const { row, nextSequence: firstSequence } = await loadForGeneration(responseId, context.attempt);
    if (isFinalStatus(row.status)) return { kind: 'cancelled' };
    // A turn's own events start after the ones it stores first (the listings, the last turn's call results).
    const turnStart = (round?.nextSequence ?? FIRST_OUTPUT_SEQUENCE) + (round?.pendingEvents.length ?? 0);
    // A previous attempt died after streaming (part of) this turn: its readers saw that output, so this attempt
    // goes on from it (interrupted-turn.ts) rather than contradict it with another answer.
    let interrupted: InterruptedTurn | undefined;
    if (firstSequence > turnStart) {
      const stored = (await events.read(responseId, turnStart - 1)).filter(
        (event) => event.sequence_number < firstSequence,
      );
      interrupted = readInterruptedTurn((round?.output ?? []) as OutputItem[], stored);
      if (interrupted.unresumable) {
        return failed(
          'response.interrupted',
          `The generation was interrupted after output had started and cannot be resumed (${interrupted.unresumable}); create the Response again.`,
        );
      }
    }
    // A previous attempt that stored (some of) the pending events and died before the model answered: the rest.
    const pendingEvents = round?.pendingEvents.slice(Math.max(0, firstSequence - round.nextSequence)) ?? [];
    handoff.put(responseId, { row }); // for finalizeResponse
    // A route's Response calls the target the flow chose; the outcome names it (billing, the Response's model).
    const model = deps.catalog.getModel(target?.model ?? row.model);
    if (!model) return failed('model.not_found', `Model ${target?.model ?? row.model} is no longer in the catalog.`);
    const served = target ? { model: model.code } : {};
    let produced = false;
    const circuits = circuitsOf(deps.providers);
    if (target?.next && circuits.isOpen(model.vendor)) {
      // The vendor failed its last calls: skipped at once, without waiting for its timeout (routing/circuits.ts).
      countFailover(deps.metrics, { route: row.model, from: model.code, to: target.next, reason: 'circuit_open' });
      return { kind: 'failover', model: model.code, reason: 'circuit_open' };
    }
    const request = row.request;
    // A synchronous Response without `stream` has no live reader: nobody has its id before the final reply. Its
    // events are still stored (a later GET ?stream=true replays them), but its vendor call need not stream and
    // its first delta need not be written at once.
    const live = row.background || request.stream;
    const writer = new EventWriter(events, responseStream(responseId), firstSequence, { flushFirstDelta: live });
    const heartbeat = setInterval(
      () => context.heartbeat({ sequence: writer.nextSequence }),
      deps.heartbeatIntervalMs ?? 2000,
    );
    const functions = round && !round.mcpToolsOff ? mcpFunctions(round.mcpServers, clientFunctionNames(request)) : [];
    // Its conversation shows the turn as it happens (api-decisions 30): a message in progress from its first text.
    // A synchronous Response without `stream` gets its whole text at once: its items are written when it ends.
    const liveTurn =
      row.conversation_id && live
        ? new LiveTurn(db, row, (err) =>
            logger.warn({ responseId, err }, 'showing the turn in its conversation failed'),
          )
        : undefined;
    const assembler = new OutputAssembler(
      writer,
      interrupted?.output ?? ((round?.output ?? []) as OutputItem[]),
      functions,
      liveTurn && ((output) => liveTurn.write(output)),
    );
    try {
      for (const event of pendingEvents) writer.emit(event);
      const prompt = await buildPrompt(db, row, model.contextWindow);
      // The conversation grew after the Response was accepted, and truncation is disabled.
      if (!prompt.fits) return failed('response.context_length_exceeded', promptTooLongMessage(prompt, model));
      const languageModel = deps.providers.languageModel(model.vendor);
      const call = toGenerateTextRequest(
        request,
        model,
        withRound(prompt, round),
        context.signal,
        round && { functions, firstTurn: round.index === 0 },
      );
      if (interrupted?.open) {
        // The vendor continues the message where the dead attempt stopped (its prefix is sent as the reply so far),
        // or the message is closed `incomplete` and answered anew. The lost attempt's tokens are the operator's.
        const continued = languageModel.continuesReplies === true;
        assembler.resume(interrupted.open, continued);
        liveTurn?.write(assembler.output);
        if (continued) call.continueFrom = interrupted.open.content[0].text;
        deps.metrics?.generationsResumed.inc({ vendor: model.vendor, how: continued ? 'continued' : 'regenerated' });
        deps.metrics?.lostAttemptTokens.inc(
          { vendor: model.vendor },
          estimatedTokens(interrupted.open.content[0].text),
        );
      } else if (interrupted) {
        deps.metrics?.generationsResumed.inc({ vendor: model.vendor, how: 'rerun' });
      }
      const cap = await turnOutputCap(row, model, call, round);
      if (cap === 'unpaid')
        return failed(
          'organization.payment_required',
          'The available balance does not pay for another model turn of this Response; top up the balance and create it again.',
        );
      if (cap !== undefined) call.maxOutputTokens = cap;
      // A target with another after it is not retried: the next vendor is the retry.
      if (target?.next) call.maxRetries = 0;
      const vendorParts = live ? languageModel.streamText(call) : partsOf(await languageModel.generateText(call));
      // The cap holds even against a vendor that streams past it (or never stops): cut there, billed at the cap.
      const parts = capOutput(vendorParts, call.maxOutputTokens, () => Math.ceil(promptTokenBound(call) / 4));
      for await (const part of parts) {
        if (context.signal.aborted) break;
        produced = true;
        assembler.accept(part, request.parallel_tool_calls);
      }
      if (target) {
        circuits.success(model.vendor);
        countServed(deps.metrics, row.model, model.code);
      }
      if (context.signal.aborted) throw abortError();
      const finish = assembler.finish();
      const mcpCalls = assembler.mcpCalls;
      if (mcpCalls.length > 0) {
        // The loop goes on: everything is stored now, so the next turn's events follow without a gap; the
        // conversation shows the turn's message completed and its calls in progress.
        liveTurn?.write(assembler.output);
        await writer.flush();
        return {
          kind: 'generated',
          ...served,
          status: 'completed',
          output: assembler.output,
          inputTokens: finish.usage.inputTokens,
          outputTokens: finish.usage.outputTokens,
          nextSequence: writer.nextSequence,
          mcpCalls,
          ...(assembler.functionCalled ? { functionCalled: true } : {}),
        };
      }
      // The closing events go out with the final one, in finalizeResponse's statement.
      const unwrittenEvents = await writer.takeUnwritten(MAX_UNWRITTEN_EVENT_CHARS);
      return {
        kind: 'generated',
        ...served,
        status: finish.reason === 'length' ? 'incomplete' : 'completed',
        output: assembler.output,
        inputTokens: finish.usage.inputTokens,
        outputTokens: finish.usage.outputTokens,
        ...(finish.reason === 'length' ? { incompleteReason: 'max_output_tokens' } : {}),
        nextSequence: writer.nextSequence,
        ...(unwrittenEvents.length > 0 ? { unwrittenEvents } : {}),
      };
    } catch (error) {
      await writer.flush().catch(() => undefined);
      if (writer.failed) {
        // Readers in this process may have seen events that were never stored: end the Response with them
        // (the finalisation stores them) instead of letting another attempt generate other text under the
        // same sequence numbers.
        logger.error({ responseId, err: error }, 'storing the event stream failed; ending the Response');
        const unwrittenEvents = await writer.takeUnstored();
        const usage = assembler.reportedUsage;
        return {
          ...failed(
            'response.interrupted',
            'The generation was interrupted because its event stream could not be stored; create the Response again.',
          ),
          inputTokens: usage?.inputTokens ?? 0,
          outputTokens: usage?.outputTokens ?? 0,
          nextSequence: writer.nextSequence,
          ...(unwrittenEvents.length > 0 ? { unwrittenEvents } : {}),
        };
      }
      if (context.signal.aborted) throw abortError();
      if (target && failoverReason(error)) circuits.failure(model.vendor);
      // After output began, only to a target that continues a reply: it goes on from the text already streamed, as
      // a crash's re-run does (interrupted-turn.ts); otherwise the Response ends as a failed attempt would.
      const reason = target?.next && (!produced || continuesReplies(target.next)) ? failoverReason(error) : undefined;
      if (target?.next && reason) {
        logger.warn(
          { responseId, route: row.model, model: model.code, err: error },
          'route target failed; failing over',
        );
        countFailover(deps.metrics, { route: row.model, from: model.code, to: target.next, reason });
        return { kind: 'failover', model: model.code, reason };
      }
      const failure = vendorFailureOf(error, 'response');
      if (!failure) throw error;
      logger.warn({ responseId, err: error }, 'vendor call failed');
      return { ...failed(failure.code, failure.message), ...served };
    } finally {
      clearInterval(heartbeat);
      // Its finalisation comes after every write of the turn to the conversation.
      await liveTurn?.settled();
    }
  }

  /**
   * The start and, for a plain model's Response, its one vendor call, in one activity (the flow's START_IN_CALL): under
   * Temporal that is one dispatch and one workflow task fewer before the first token. A Response with MCP tools or a
   * route only starts here: its listing or its route's plan comes before its first call. A retry runs the start again,
   * which finds the Response started and goes on to the call (a cancelled one does not proceed).
   */
  async function startAndCallProvider(input: ResponseJobInput, passedContext?: ActivityContext) {
    const start = await startResponse(input);
    if (!start.proceed || start.mcp || start.route) return { start };
    return { start, outcome: await callProvider(input, passedContext) };
  }

  /**
   * Finalisations of concurrent Responses are group-committed (db/group-commit.ts): each charges its account,
   * and a statement that does holds that account's row lock until its commit, so one busy account serialised
   * them all behind each other's WAL flush. A batch is one statement (writeFinalizations) and one commit;
   * one that appends to a conversation also needs the append in its transaction and goes alone.
   */
  const finalizations = createGroupCommit<
    { record: FinalRecord; turn?: { row: ResponseRow; output: OutputItem[] | 'dropped' } },
    { sequence: number; debited: number } | undefined
  >({
    maxBatch: 100,
    onBatch: (size) => deps.metrics?.groupCommitBatch.observe({ writer: 'response_finalizations' }, size),
    write: async (items) => {
      const results = new Map<string, { sequence: number; debited: number }>();
      const plain = items.filter((item) => !item.turn).map((item) => item.record);
      if (plain.length > 0) for (const [id, written] of await writeFinalizations(db, plain)) results.set(id, written);
      for (const { record, turn } of items) {
        if (!turn) continue;
        await inTransaction(db, async (trx) => {
          const written = await writeFinalizations(trx, [record]);
          if (written.size === 0) return;
          // The turn's final state in its conversation (api-decisions 30): the output completed, or, for a
          // Response that failed or was cancelled, its input kept and its partial output removed.
          if (turn.output === 'dropped') await dropTurnOutput(trx, turn.row);
          else await syncTurnOutput(trx, turn.row, turn.output, 'final');
          results.set(record.id, written.get(record.id)!);
        });
      }
      return items.map(({ record }) => results.get(record.id));
    },
  });

  /**
   * All at once, in one statement (with a conversation append, one transaction): final status, output, usage,
   * the debit, the generation's unwritten closing events and the final event. Guarded by the stored status, so
   * it writes all of it or, when a concurrent cancel finalised the Response first, none of it.
   */
  async function finalizeResponse({
    responseId,
    outcome,
  }: ResponseJobInput & { outcome: FinalOutcome }): Promise<FinalizeResult> {
    // A handed-over row may be older than the stored one, but only in its status, and the write below is
    // guarded by the stored status.
    const row = handoff.take<HandedRow>(responseId)?.row ?? (await loadResponse(db, responseId));
    mcp.forget(responseId);
    const settled = { status: row.status, webhook: Boolean(row.metadata.webhook_url) };
    if (isFinalStatus(row.status)) return settled;

    // A route's Response is billed at the price of the target that served it (api-decisions 32).
    const served = outcome.model !== undefined ? deps.catalog.getModel(outcome.model) : undefined;
    const { record, status, unwritten } = finalRecordOf(
      row,
      outcome,
      (served ?? deps.catalog.resolveModel(row.model))?.price ?? null,
      served,
    );
    const turn = row.conversation_id
      ? { row, output: outcome.kind === 'generated' ? record.output : ('dropped' as const) }
      : undefined;
    const written = await finalizations({ record, turn });
    if (!written) {
      // A concurrent cancel (or a previous run) finalised it first: nothing was written here.
      const current = await loadResponse(db, responseId);
      return { ...settled, status: current.status };
    }
    await events.notify(responseStream(responseId), [
      ...unwritten,
      { ...(record.final_event as StreamEvent), sequence_number: written.sequence },
    ]);
    recordJobFinished(deps.metrics, 'response', status, served ?? deps.catalog.getModel(row.model));
    // Written in the finalisation's own statement (not ledger.debit): counted here, as the ledger counts its debits.
    recordBilled(deps.metrics, {
      model: served?.code ?? row.model,
      service: 'responses',
      amount: written.debited,
      inputTokens: record.usage?.input_tokens,
      outputTokens: record.usage?.output_tokens,
    });
    return { status, webhook: settled.webhook };
  }

  async function sendWebhook({ responseId }: ResponseJobInput) {
    const row = await loadResponse(db, responseId);
    const url = row.metadata.webhook_url;
    if (!url) return;
    await deps.webhooks.send({
      resourceId: row.id,
      accountId: row.account_id,
      url,
      payload: {
        response_id: row.id,
        ...(row.conversation_id ? { conversation_id: row.conversation_id } : {}),
        status: row.status,
        status_at: Math.floor(Date.now() / 1000),
      },
    });
  }

  return {
    startResponse,
    startAndCallProvider,
    planRoute: planResponseRoute,
    ...mcp.activities,
    callProvider,
    finalizeResponse,
    sendWebhook,
  };
}

/** The prompt of a later model turn of an MCP loop: the earlier turns' output (calls and their results) after it. */
function withRound(prompt: Prompt, round: GenerationRound | undefined): Prompt {
  if (!round || round.output.length === 0) return prompt;
  return { ...prompt, items: [...prompt.items, ...(round.output as OutputItem[]).flatMap(outputItemToPrompt)] };
}

/** Tokens of a text the vendor produced but never reported (a lost attempt): about four characters each. */
const estimatedTokens = (text: string) => Math.ceil(text.length / 4);

/** A failed generation with no usage to bill. */
function failed(code: string, message: string): Extract<GenerationOutcome, { kind: 'failed' }> {
  return { kind: 'failed', code, message, inputTokens: 0, outputTokens: 0 };
}
