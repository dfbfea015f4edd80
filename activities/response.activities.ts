import { sql } from 'kysely';
import { chargeInserted, debitRow } from '../src/billing/ledger';
import { priceCall } from '../src/billing/pricing';
import { appendItems, type NewConversationItem } from '../src/conversations/conversations.repository';
import type { Db } from '../src/db/database';
import { inTransaction } from '../src/db/database';
import { createGroupCommit } from '../src/db/group-commit';
import { abortError, currentActivityContext, type ActivityContext } from '../src/engine/activity-context';
import type { EventLog } from '../src/events/event-log';
import { EventWriter } from '../src/events/event-writer';
import type { StreamEvent } from '../src/events/stream-event';
import { newId } from '../src/ids';
import type { Logger } from '../src/logger';
import { ProviderError, type GenerateTextRequest, type GenerateTextResult, type LanguageModel, type TextStreamPart } from '../src/providers/provider';
import { toApiError } from '../src/providers/provider-errors';
import { buildPrompt, promptTooLongMessage } from '../src/responses/prompt';
import { isFinalStatus, type FunctionCallOutputItem, type MessageOutputItem, type OutputItem, type ResponseUsage } from '../src/responses/response-types';
import { responseToWire } from '../src/responses/response-wire';
import type { ResponseRow } from '../src/responses/responses.table';
import { FIRST_OUTPUT_SEQUENCE, inProgressEvent, RowHandoff } from '../src/responses/row-handoff';
import type { CatalogModel } from '../src/catalog/catalog-types';
import type { WebhookSender } from '../src/webhooks/webhook-sender';
import type { FinalizeResult, GenerationOutcome, ResponseActivities, ResponseJobInput } from '../workflows/response.flow';

export interface ResponseActivityDeps {
  db: Db;
  logger: Logger;
  events: EventLog;
  webhooks: WebhookSender;
  catalog: { getModel(code: string): CatalogModel | undefined };
  providers: { languageModel(vendor: string): LanguageModel };
  heartbeatIntervalMs?: number;
  /** Rows handed between the steps of a Response in this process (see RowHandoff). */
  handoff?: RowHandoff;
}

/**
 * Closing events up to this size travel in the outcome to finalizeResponse (one write less per Response);
 * larger ones (a long answer repeated in its `done` events) are written by callProvider, to keep workflow
 * histories small.
 */
const MAX_UNWRITTEN_EVENT_CHARS = 128 * 1024;

export function createResponseActivities(deps: ResponseActivityDeps): ResponseActivities {
  const { db, events, logger } = deps;

  const load = (id: string, executor: Db = db) => executor.selectFrom('responses').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  // Shared with the Responses service when it runs in this process (it hands over Responses it wrote started).
  const handoff = deps.handoff ?? new RowHandoff();

  /**
   * queued → in_progress plus the `response.in_progress` event (always sequence 1: only `response.created`, 0,
   * is written before it), for the Responses of concurrently starting jobs in one statement and one commit.
   * Answers the rows it started.
   */
  const starts = createGroupCommit<string, ResponseRow | undefined>({
    maxBatch: 200,
    write: async (ids) => {
      const eventsById = Object.fromEntries(ids.map((id) => [id, [inProgressEvent(id)]]));
      const started = await sql<ResponseRow>`
        with started as (
          update responses set status = 'in_progress', started_at = now()
          where id = any(${ids}::text[]) and status = 'queued' and cancel_requested_at is null
          returning *),
        event as (
          insert into response_events (response_id, first_seq, last_seq, events)
          select id, 1, 1, ${JSON.stringify(eventsById)}::jsonb -> id from started)
        select * from started`.execute(db);
      const byId = new Map(started.rows.map((row) => [row.id, row]));
      return ids.map((id) => byId.get(id));
    },
  });

  async function startResponse({ responseId }: ResponseJobInput) {
    // Its creator wrote it started and runs it here (a synchronous or streamed Response with a free slot).
    const handed = handoff.take(responseId);
    if (handed?.startedAtCreation) {
      handoff.put(responseId, { row: handed.row, nextSequence: FIRST_OUTPUT_SEQUENCE });
      return { proceed: true };
    }
    const startedRow = await starts(responseId);
    if (startedRow) {
      handoff.put(responseId, { row: startedRow, nextSequence: FIRST_OUTPUT_SEQUENCE });
      await events.notify(responseId, [inProgressEvent(responseId)]);
      return { proceed: true };
    }
    // A re-run after a crash finds it already started; a cancelled or finished one must not run.
    const row = await db.selectFrom('responses').select(['status', 'cancel_requested_at']).where('id', '=', responseId).executeTakeFirst();
    return { proceed: row?.status === 'in_progress' && row.cancel_requested_at === null };
  }

  /**
   * The Response and the sequence number its output starts at: as startResponse left them, or read. Only a
   * first attempt trusts the handed-over sequence: an earlier attempt (here or, under Temporal, on another
   * worker) may have written events since.
   */
  async function loadForGeneration(responseId: string, attempt: number): Promise<{ row: ResponseRow; nextSequence: number }> {
    const handed = handoff.take(responseId);
    if (handed?.nextSequence !== undefined && attempt === 1) return { row: handed.row, nextSequence: handed.nextSequence };
    const { next_sequence: nextSequence, ...row } = await db
      .selectFrom('responses')
      .selectAll()
      .select((eb) =>
        eb
          .selectFrom('response_events')
          .select(sql<number>`coalesce(max(last_seq), -1) + 1`.as('next'))
          .where('response_id', '=', responseId)
          .as('next_sequence'),
      )
      .where('id', '=', responseId)
      .executeTakeFirstOrThrow();
    return { row, nextSequence: Number(nextSequence) };
  }

  /** `passedContext`: the embedded engine's (cancellation, heartbeat); under Temporal, Temporal's Context. */
  async function callProvider({ responseId }: ResponseJobInput, passedContext?: ActivityContext): Promise<GenerationOutcome> {
    const context = currentActivityContext(passedContext);
    const { row, nextSequence: firstSequence } = await loadForGeneration(responseId, context.attempt);
    if (isFinalStatus(row.status)) return { kind: 'cancelled' };
    if (firstSequence > FIRST_OUTPUT_SEQUENCE) {
      // A previous attempt died after streaming output; clients already saw part of it, so a silent
      // regeneration would contradict their buffers. End cleanly instead.
      return {
        kind: 'failed',
        code: 'response.interrupted',
        message: 'The generation was interrupted after output had started; create the Response again.',
        inputTokens: 0,
        outputTokens: 0,
      };
    }
    handoff.put(responseId, { row }); // for finalizeResponse
    const model = deps.catalog.getModel(row.model);
    if (!model) return { kind: 'failed', code: 'model.not_found', message: `Model ${row.model} is no longer in the catalog.`, inputTokens: 0, outputTokens: 0 };
    const request = row.request;
    // A synchronous Response without `stream` has no live reader: nobody has its id before the final reply. Its
    // events are still stored (a later GET ?stream=true replays them), but its vendor call need not stream and
    // its first delta need not be written at once.
    const live = row.background || request.stream;
    const writer = new EventWriter(events, responseId, firstSequence, { flushFirstDelta: live });
    const heartbeat = setInterval(() => context.heartbeat({ sequence: writer.nextSequence }), deps.heartbeatIntervalMs ?? 2000);
    const assembler = new OutputAssembler(writer);
    try {
      const prompt = await buildPrompt(db, row, model.contextWindow);
      if (!prompt.fits) {
        // The conversation grew after the Response was accepted, and truncation is disabled.
        return {
          kind: 'failed',
          code: 'response.context_length_exceeded',
          message: promptTooLongMessage(prompt, model),
          inputTokens: 0,
          outputTokens: 0,
        };
      }
      const languageModel = deps.providers.languageModel(model.vendor);
      const functionTools = request.tools.filter((tool) => tool.type === 'function');
      const call: GenerateTextRequest = {
        model: model.upstreamId,
        instructions: prompt.instructions,
        items: prompt.items,
        tools: functionTools.length > 0 ? functionTools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters ?? { type: 'object', properties: {} } })) : undefined,
        toolChoice: toToolChoice(request.tool_choice),
        parallelToolCalls: request.parallel_tool_calls,
        temperature: request.temperature ?? undefined,
        topP: request.top_p ?? undefined,
        maxOutputTokens: request.max_output_tokens ?? undefined,
        reasoningEffort: request.reasoning_effort ?? undefined,
        verbosity: request.verbosity ?? undefined,
        signal: context.signal,
      };
      const parts = live ? languageModel.streamText(call) : partsOf(await languageModel.generateText(call));
      for await (const part of parts) {
        if (context.signal.aborted) break;
        assembler.accept(part, request.parallel_tool_calls);
      }
      if (context.signal.aborted) throw abortError();
      const finish = assembler.finish();
      // The closing events go out with the final one, in finalizeResponse's statement.
      const unwrittenEvents = await writer.takeUnwritten(MAX_UNWRITTEN_EVENT_CHARS);
      return {
        kind: 'generated',
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
          kind: 'failed',
          code: 'response.interrupted',
          message: 'The generation was interrupted because its event stream could not be stored; create the Response again.',
          inputTokens: usage?.inputTokens ?? 0,
          outputTokens: usage?.outputTokens ?? 0,
          nextSequence: writer.nextSequence,
          ...(unwrittenEvents.length > 0 ? { unwrittenEvents } : {}),
        };
      }
      if (context.signal.aborted) throw abortError();
      if (ProviderError.isInstance(error) || (error as { status?: number })?.status === 400) {
        const apiError = toApiError(error, 'response');
        logger.warn({ responseId, err: error }, 'vendor call failed');
        return { kind: 'failed', code: apiError.code, message: apiError.message, inputTokens: 0, outputTokens: 0 };
      }
      throw error;
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * Final status, output, usage, debit, the generation's unwritten closing events and the final event in one statement (a data-modifying CTE guarded by
   * the status, so it writes all of it or, when a concurrent cancel finalised the Response first, none of
   * it): two round trips where a BEGIN / SELECT FOR UPDATE / writes / COMMIT transaction took six. With a
   * conversation, the append joins it in one transaction.
   */
  /**
   * Finalisations of concurrent Responses are group-committed (db/group-commit.ts): each charges its account,
   * and a statement that does holds that account's row lock until its commit, so one busy account serialised
   * them all behind each other's WAL flush. A batch is one statement (writeFinalizations) and one commit;
   * one that appends to a conversation also needs the append in its transaction and goes alone.
   */
  const finalizations = createGroupCommit<{ record: FinalRecord; appendTo?: { row: ResponseRow; output: OutputItem[] } }, { sequence: number } | undefined>({
    maxBatch: 100,
    write: async (items) => {
      const results = new Map<string, number>();
      const plain = items.filter((item) => !item.appendTo).map((item) => item.record);
      if (plain.length > 0) for (const [id, sequence] of await writeFinalizations(db, plain)) results.set(id, sequence);
      for (const { record, appendTo } of items) {
        if (!appendTo) continue;
        await inTransaction(db, async (trx) => {
          const written = await writeFinalizations(trx, [record]);
          if (written.size === 0) return;
          await appendToConversation(trx, appendTo.row, appendTo.output);
          results.set(record.id, written.get(record.id)!);
        });
      }
      return items.map(({ record }) => (results.has(record.id) ? { sequence: results.get(record.id)! } : undefined));
    },
  });

  async function finalizeResponse({ responseId, outcome }: ResponseJobInput & { outcome: GenerationOutcome }): Promise<FinalizeResult> {
    // A handed-over row may be older than the stored one, but only in its status, and the write below is
    // guarded by the stored status.
    const row = handoff.take(responseId)?.row ?? (await load(responseId));
    const settled = { status: row.status, webhook: Boolean(row.metadata.webhook_url) };
    if (isFinalStatus(row.status)) return settled;

    const model = deps.catalog.getModel(row.model);
    const tokens = outcome.kind === 'cancelled' ? { input: 0, output: 0 } : { input: outcome.inputTokens, output: outcome.outputTokens };
    const { cost, amount } = priceCall(model?.price ?? null, tokens);
    const usage: ResponseUsage = { input_tokens: tokens.input, output_tokens: tokens.output, total_tokens: tokens.input + tokens.output, cost };
    const status = outcome.kind === 'generated' ? outcome.status : outcome.kind;
    const output = outcome.kind === 'generated' ? (outcome.output as OutputItem[]) : [];
    const final: ResponseRow = {
      ...row,
      status,
      output,
      usage,
      error: outcome.kind === 'failed' ? { code: outcome.code, message: outcome.message } : null,
      incomplete_details: outcome.kind === 'generated' && outcome.incompleteReason ? { reason: outcome.incompleteReason } : null,
      completed_at: new Date(),
    };
    // The sequence number is the stream's next one, read by the statement itself (a failed or cancelled
    // generation may not know it); the event is completed with it there.
    const template = { type: `response.${status}`, sequence_number: 0, response: responseToWire(final) };
    const debit =
      amount > 0
        ? debitRow({
            accountId: row.account_id,
            amount,
            operationKey: `response:${row.id}`,
            metadata: { source: 'api', vendor: row.vendor, model: row.model, service: 'responses', response_id: row.id },
            usage: { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.total_tokens },
          })
        : undefined;

    const unwritten = (outcome.kind === 'cancelled' ? [] : outcome.unwrittenEvents ?? []) as StreamEvent[];
    const record: FinalRecord = {
      id: responseId,
      status,
      output,
      usage,
      error: final.error,
      incomplete_details: final.incomplete_details,
      completed_at: final.completed_at!.toISOString(),
      final_event: template,
      tail_first: unwritten[0]?.sequence_number ?? null,
      tail_last: unwritten.at(-1)?.sequence_number ?? null,
      tail_events: unwritten.length > 0 ? unwritten : null,
      debit_id: debit?.id ?? null,
      debit_amount: debit?.amount ?? null,
      debit_currency: debit?.currency ?? null,
      debit_metadata: debit?.metadata ?? null,
      debit_usage: debit?.usage ?? null,
      debit_operation_key: debit?.operation_key ?? null,
    };
    const appendTo = outcome.kind === 'generated' && row.conversation_id ? row.conversation_id : undefined;
    const written = await finalizations({ record, appendTo: appendTo ? { row, output } : undefined });
    if (!written) {
      // A concurrent cancel (or a previous run) finalised it first: nothing was written here.
      const current = await db.selectFrom('responses').select('status').where('id', '=', responseId).executeTakeFirstOrThrow();
      return { ...settled, status: current.status };
    }
    await events.notify(responseId, [...unwritten, { ...template, sequence_number: written.sequence } as StreamEvent]);
    return { status, webhook: settled.webhook };
  }

  /** Input first, then output; item ids are the Response's own, so a retried finalisation cannot duplicate them. */
  async function appendToConversation(trx: Db, row: ResponseRow, output: OutputItem[]) {
    const exists = await trx.selectFrom('conversations').select('id').where('id', '=', row.conversation_id!).executeTakeFirst();
    if (!exists) return; // deleted while the Response ran: nothing to append to
    const items: NewConversationItem[] = [
      ...row.request.input.map((item, index): NewConversationItem =>
        item.type === 'message'
          ? { type: 'message', role: item.role, content: item.content, id: `msg_${row.id.slice(5)}_in${index}` }
          : { type: 'function_call_output', callId: item.call_id, output: item.output, id: `fco_${row.id.slice(5)}_in${index}` },
      ),
      ...output.map((item): NewConversationItem =>
        item.type === 'message'
          ? { type: 'message', role: 'assistant', content: item.content, id: item.id, status: item.status }
          : { type: 'function_call', callId: item.call_id, name: item.name, arguments: item.arguments, id: item.id, status: 'completed' },
      ),
    ];
    await appendItems(trx, { conversationId: row.conversation_id!, accountId: row.account_id, items, responseId: row.id });
  }

  async function sendWebhook({ responseId }: ResponseJobInput) {
    const row = await load(responseId);
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

  return { startResponse, callProvider, finalizeResponse, sendWebhook };
}

/** One Response's finalisation, as plain JSON for writeFinalizations. */
interface FinalRecord {
  id: string;
  status: string;
  output: OutputItem[];
  usage: ResponseUsage;
  error: unknown;
  incomplete_details: unknown;
  completed_at: string;
  /** The final event; its sequence number is filled in by the statement. */
  final_event: unknown;
  tail_first: number | null;
  tail_last: number | null;
  tail_events: StreamEvent[] | null;
  debit_id: string | null;
  debit_amount: number | null;
  debit_currency: string | null;
  /** JSON text, as debitRow writes it. */
  debit_metadata: string | null;
  debit_usage: string | null;
  debit_operation_key: string | null;
}

/**
 * Finalises Responses in one statement (a data-modifying CTE over the records): final status, output and
 * usage; the generation's unwritten closing events and the final event, whose sequence number is the
 * stream's next one, read by the statement itself (a failed or cancelled generation may not know it); the
 * debit and its balance change. Guarded by the stored status: a Response that a concurrent cancel (or a
 * previous run) finalised first gets none of it. Answers the final event's sequence number per Response
 * written.
 */
async function writeFinalizations(executor: Db, records: FinalRecord[]): Promise<Map<string, number>> {
  const written = await sql<{ id: string; sequence: number }>`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(records)}::jsonb) as input (
        id text, status text, output jsonb, usage jsonb, error jsonb, incomplete_details jsonb, completed_at timestamptz,
        final_event jsonb, tail_first int, tail_last int, tail_events jsonb,
        debit_id text, debit_amount bigint, debit_currency text, debit_metadata text, debit_usage text, debit_operation_key text)),
    updated as (
      update responses set
        status = input.status, output = input.output, usage = input.usage, error = input.error,
        incomplete_details = input.incomplete_details, completed_at = input.completed_at
      from input
      where responses.id = input.id and responses.status in ('queued', 'in_progress')
      returning responses.id, responses.account_id),
    stored as (
      select updated.id, coalesce((select max(last_seq) from response_events where response_events.response_id = updated.id), -1) as last_seq
      from updated),
    tail_events as (
      -- Only the tail's events after what is stored: a batch whose write failed may in fact have committed
      -- (its reply lost), and the batches after it must still be stored.
      insert into response_events (response_id, first_seq, last_seq, events)
      select input.id, (tail.events -> 0 ->> 'sequence_number')::int, input.tail_last, tail.events
      from stored join input on input.id = stored.id
      cross join lateral (
        select jsonb_agg(event order by position) as events
        from jsonb_array_elements(input.tail_events) with ordinality as element (event, position)
        where (event ->> 'sequence_number')::int > stored.last_seq) as tail
      where input.tail_events is not null and tail.events is not null),
    next_event as (
      select stored.id, greatest(stored.last_seq + 1, coalesce(input.tail_last + 1, 0)) as sequence
      from stored join input on input.id = stored.id),
    final_event as (
      insert into response_events (response_id, first_seq, last_seq, events)
      select next_event.id, next_event.sequence, next_event.sequence,
        jsonb_build_array(jsonb_set(input.final_event, '{sequence_number}', to_jsonb(next_event.sequence)))
      from next_event join input on input.id = next_event.id),
    debit as (
      insert into ledger_transactions (id, account_id, type, amount, currency, metadata, usage, operation_key)
      select input.debit_id, updated.account_id, 'debit', input.debit_amount, input.debit_currency,
        input.debit_metadata::jsonb, input.debit_usage::jsonb, input.debit_operation_key
      from updated join input on input.id = updated.id
      where input.debit_id is not null
      on conflict (account_id, operation_key) do nothing
      returning account_id, amount),
    charged as (${chargeInserted('debit')})
    select id, sequence from next_event`.execute(executor);
  return new Map(written.rows.map((row) => [row.id, Number(row.sequence)]));
}

function toToolChoice(choice: unknown) {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (choice && typeof choice === 'object' && (choice as { type?: string }).type === 'function') {
    return { type: 'function' as const, name: String((choice as { name?: string }).name) };
  }
  return undefined;
}

/** A whole generation as the parts a stream of it would have had: its text, its tool calls, its finish. */
function* partsOf(result: GenerateTextResult): Iterable<TextStreamPart> {
  if (result.text) yield { type: 'text-delta', text: result.text };
  for (const call of result.toolCalls) yield { type: 'tool-call', callId: call.callId, name: call.name, arguments: call.arguments };
  yield { type: 'finish', finishReason: result.finishReason, usage: result.usage };
}

/** Turns provider stream parts into output items and the spec's SSE events. */
class OutputAssembler {
  readonly output: OutputItem[] = [];
  private message: MessageOutputItem | undefined;
  private finishPart: Extract<TextStreamPart, { type: 'finish' }> | undefined;

  constructor(private readonly writer: EventWriter) {}

  accept(part: TextStreamPart, parallelToolCalls: boolean) {
    if (part.type === 'text-delta') {
      if (!part.text) return;
      if (!this.message) {
        this.message = { id: newId('msg'), type: 'message', role: 'assistant', status: 'in_progress', content: [{ type: 'output_text', text: '' }] };
        this.output.push(this.message);
        this.writer.emit({ type: 'response.output_item.added', output_index: this.output.length - 1, item: { ...this.message, content: [] } });
      }
      this.message.content[0].text += part.text;
      this.writer.emit({ type: 'response.output_text.delta', output_index: this.output.indexOf(this.message), content_index: 0, item_id: this.message.id, delta: part.text });
    } else if (part.type === 'tool-call') {
      this.closeMessage('completed');
      if (!parallelToolCalls && this.output.some((item) => item.type === 'function_call')) return;
      const item: FunctionCallOutputItem = { id: newId('fc'), type: 'function_call', call_id: part.callId, name: part.name, arguments: part.arguments, status: 'completed' };
      this.output.push(item);
      const outputIndex = this.output.length - 1;
      this.writer.emit({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, arguments: '', status: 'in_progress' } });
      this.writer.emit({ type: 'response.output_item.done', output_index: outputIndex, item });
    } else {
      this.finishPart = part;
    }
  }

  /** The token counts the vendor reported, once it finished. */
  get reportedUsage() {
    return this.finishPart?.usage;
  }

  finish() {
    const reason = this.finishPart?.finishReason ?? 'stop';
    this.closeMessage(reason === 'length' ? 'incomplete' : 'completed');
    return { reason, usage: this.finishPart?.usage ?? { inputTokens: 0, outputTokens: 0 } };
  }

  private closeMessage(status: MessageOutputItem['status']) {
    const message = this.message;
    if (!message) return;
    this.message = undefined;
    message.status = status;
    const outputIndex = this.output.indexOf(message);
    this.writer.emit({ type: 'response.output_text.done', output_index: outputIndex, content_index: 0, item_id: message.id, text: message.content[0].text });
    this.writer.emit({ type: 'response.output_item.done', output_index: outputIndex, item: message });
  }
}
