import { sql } from 'kysely';
import { chargeInserted, debitRow } from '../src/billing/ledger';
import { priceCall } from '../src/billing/pricing';
import { appendItems, type NewConversationItem } from '../src/conversations/conversations.repository';
import type { Db } from '../src/db/database';
import { inTransaction } from '../src/db/database';
import { abortError, currentActivityContext } from '../src/engine/activity-context';
import type { EventLog } from '../src/events/event-log';
import { EventWriter } from '../src/events/event-writer';
import type { StreamEvent } from '../src/events/stream-event';
import { newId } from '../src/ids';
import type { Logger } from '../src/logger';
import { ProviderError, type LanguageModel, type TextStreamPart } from '../src/providers/provider';
import { toApiError } from '../src/providers/provider-errors';
import { buildPrompt } from '../src/responses/prompt';
import { isFinalStatus, type FunctionCallOutputItem, type MessageOutputItem, type OutputItem, type ResponseUsage } from '../src/responses/response-types';
import { responseToWire } from '../src/responses/response-wire';
import type { ResponseRow } from '../src/responses/responses.table';
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
}

/** `response.created` is 0 and `response.in_progress` 1: output starts at 2. */
const FIRST_OUTPUT_SEQUENCE = 2;

export function createResponseActivities(deps: ResponseActivityDeps): ResponseActivities {
  const { db, events, logger } = deps;

  const load = (id: string, executor: Db = db) => executor.selectFrom('responses').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  async function startResponse({ responseId }: ResponseJobInput) {
    // First start: queued → in_progress plus the in_progress event in one statement. It is always sequence 1:
    // only `response.created` (0) is written before it.
    const event: StreamEvent = { type: 'response.in_progress', sequence_number: 1, response: { id: responseId, status: 'in_progress' } };
    const started = await sql<{ response_id: string }>`
      with started as (
        update responses set status = 'in_progress', started_at = now()
        where id = ${responseId} and status = 'queued' and cancel_requested_at is null
        returning id)
      insert into response_events (response_id, first_seq, last_seq, events)
      select id, 1, 1, ${JSON.stringify([event])}::jsonb from started
      returning response_id`.execute(db);
    if (started.rows.length > 0) {
      await events.notify(responseId, [event]);
      return { proceed: true };
    }
    // A re-run after a crash finds it already started; a cancelled or finished one must not run.
    const row = await db.selectFrom('responses').select(['status', 'cancel_requested_at']).where('id', '=', responseId).executeTakeFirst();
    return { proceed: row?.status === 'in_progress' && row.cancel_requested_at === null };
  }

  async function callProvider({ responseId }: ResponseJobInput): Promise<GenerationOutcome> {
    const context = currentActivityContext();
    const { next_sequence: firstSequence, ...row } = await db
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
      .executeTakeFirstOrThrow()
      .then((found) => ({ ...found, next_sequence: Number(found.next_sequence) }));
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
    const model = deps.catalog.getModel(row.model);
    if (!model) return { kind: 'failed', code: 'model.not_found', message: `Model ${row.model} is no longer in the catalog.`, inputTokens: 0, outputTokens: 0 };
    const writer = new EventWriter(events, responseId, firstSequence);
    const heartbeat = setInterval(() => context.heartbeat({ sequence: writer.nextSequence }), deps.heartbeatIntervalMs ?? 2000);
    const assembler = new OutputAssembler(writer);
    try {
      const prompt = await buildPrompt(db, row, model.contextWindow);
      const request = row.request;
      const languageModel = deps.providers.languageModel(model.vendor);
      const functionTools = request.tools.filter((tool) => tool.type === 'function');
      const parts = languageModel.streamText({
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
      });
      for await (const part of parts) {
        if (context.signal.aborted) break;
        assembler.accept(part, request.parallel_tool_calls);
      }
      if (context.signal.aborted) throw abortError();
      const finish = assembler.finish();
      const nextSequence = await writer.flush();
      return {
        kind: 'generated',
        status: finish.reason === 'length' ? 'incomplete' : 'completed',
        output: assembler.output,
        inputTokens: finish.usage.inputTokens,
        outputTokens: finish.usage.outputTokens,
        ...(finish.reason === 'length' ? { incompleteReason: 'max_output_tokens' } : {}),
        nextSequence,
      };
    } catch (error) {
      await writer.flush().catch(() => undefined);
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
   * Final status, output, usage, debit and final event in one statement (a data-modifying CTE guarded by
   * the status, so it writes all of it or, when a concurrent cancel finalised the Response first, none of
   * it): two round trips where a BEGIN / SELECT FOR UPDATE / writes / COMMIT transaction took six. With a
   * conversation, the append joins it in one transaction.
   */
  async function finalizeResponse({ responseId, outcome }: ResponseJobInput & { outcome: GenerationOutcome }): Promise<FinalizeResult> {
    const row = await load(responseId);
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

    const write = async (executor: Db) => {
      const written = await sql<{ sequence: number }>`
        with updated as (
          update responses set
            status = ${status}, output = ${JSON.stringify(output)}::jsonb, usage = ${JSON.stringify(usage)}::jsonb,
            error = ${JSON.stringify(final.error)}::jsonb, incomplete_details = ${JSON.stringify(final.incomplete_details)}::jsonb,
            completed_at = ${final.completed_at}
          where id = ${responseId} and status in ('queued', 'in_progress')
          returning id, account_id),
        next_event as (
          select coalesce(max(last_seq), -1) + 1 as sequence from response_events where response_id = ${responseId}),
        final_event as (
          insert into response_events (response_id, first_seq, last_seq, events)
          select updated.id, next_event.sequence, next_event.sequence,
            jsonb_build_array(jsonb_set(${JSON.stringify(template)}::jsonb, '{sequence_number}', to_jsonb(next_event.sequence)))
          from updated, next_event),
        debit as (
          insert into ledger_transactions (id, account_id, type, amount, currency, metadata, usage, operation_key)
          select ${debit?.id ?? null}, updated.account_id, 'debit', ${debit?.amount ?? 0}, ${debit?.currency ?? null},
            ${debit?.metadata ?? null}::jsonb, ${debit?.usage ?? null}::jsonb, ${debit?.operation_key ?? null}
          from updated where ${debit !== undefined}
          on conflict (account_id, operation_key) do nothing
          returning account_id, amount),
        charged as (${chargeInserted('debit')})
        select next_event.sequence from updated, next_event`.execute(executor);
      return written.rows[0];
    };

    const appendTo = outcome.kind === 'generated' && row.conversation_id ? row.conversation_id : undefined;
    const written = appendTo
      ? await inTransaction(db, async (trx) => {
          const result = await write(trx);
          if (result) await appendToConversation(trx, row, output);
          return result;
        })
      : await write(db);
    if (!written) {
      // A concurrent cancel (or a previous run) finalised it first: nothing was written here.
      const current = await db.selectFrom('responses').select('status').where('id', '=', responseId).executeTakeFirstOrThrow();
      return { ...settled, status: current.status };
    }
    await events.notify(responseId, [{ ...template, sequence_number: Number(written.sequence) } as StreamEvent]);
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

function toToolChoice(choice: unknown) {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (choice && typeof choice === 'object' && (choice as { type?: string }).type === 'function') {
    return { type: 'function' as const, name: String((choice as { name?: string }).name) };
  }
  return undefined;
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
