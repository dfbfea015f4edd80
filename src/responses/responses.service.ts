import { findAccount } from '../accounts/accounts.repository';
import { assistantFunctionTools } from '../assistants/assistant-tools';
import { findAssistant } from '../assistants/assistants.repository';
import { holdPlacement, holdRefused, type Ledger } from '../billing/ledger';
import type { Catalog } from '../catalog/catalog.service';
import { findConversation } from '../conversations/conversations.repository';
import { retryingConflicts, transactionRetryingConflicts } from '../db/conflict-retry';
import type { Db } from '../db/database';
import { createGroupCommit } from '../db/group-commit';
import { recordJobStarted, type Metrics } from '../metrics/metrics';
import type { Admitted, Engine } from '../engine/engine';
import type { EventLog, Follower } from '../events/event-log';
import { ApiError, forbidden, invalidRequest, notFound } from '../errors';
import { stillRunning, type Idempotency, type IdempotentCall } from '../idempotency/idempotency';
import { newId } from '../ids';
import { validateOutboundUrl } from '../outbound/address-guard';
import { appendTurnInput } from './conversation-turns';
import { buildPrompt, promptTokenBound, promptTooLongMessage } from './prompt';
import { generationHold, outputCapOf } from '../billing/generation-hold';
import type { CreateResponseBody } from './responses.schema';
import {
  inputItemId,
  type FunctionToolSpec,
  type InputItem,
  type McpToolSpec,
  type ResponseRequest,
} from './response-types';
import type { Page, PageQuery } from '../db/keyset-page';
import { isFinalStatus } from './response-types';
import { createdEvent, inProgressEvent, responseStream } from './response-events';
import { responseToWire, type ResponseWire } from './responses.wire';
import {
  findResponse,
  findResponseById,
  insertQueuedResponses,
  markCancelRequested,
  markDeleted,
  type HandedRow,
  type QueuedInsert,
  type QueuedResult,
} from './responses.repository';
import type { ResponseRow } from './responses.table';

export interface ResponsesServiceDeps {
  db: Db;
  idempotency: Idempotency;
  catalog: Catalog;
  ledger: Ledger;
  engine: Engine;
  events: EventLog;
  allowPrivateNetworks: boolean;
  metrics?: Metrics;
}

export interface CreateResult {
  response: ResponseRow;
  /** True when an Idempotency-Key matched an earlier request: nothing new was started. */
  replayed: boolean;
  /** With `subscribe`, the new Response's events, subscribed to before its job could write any. */
  follower?: Follower;
}

const CANCEL_WAIT_MS = 30_000;

export function createResponsesService(deps: ResponsesServiceDeps) {
  const { db, catalog, ledger, engine, events } = deps;
  // Creations of concurrent requests share one statement and one commit (db/group-commit.ts).
  const insertQueuedAlone = createGroupCommit<QueuedInsert, QueuedResult>({
    maxBatch: 100,
    write: (items) => retryingConflicts(() => insertQueuedResponses(db, items, ledger.placeHoldsQuery)),
    onBatch: (size) => deps.metrics?.groupCommitBatch.observe({ writer: 'responses' }, size),
  });
  // A Response linked to a conversation appends its input there in the transaction that creates it (api-decisions
  // 30): the statement, then each conversation's append, which takes the conversation's row lock (in id order, so
  // two batches cannot deadlock) and so numbers the items after every append committed before.
  const insertQueuedInConversation = createGroupCommit<QueuedInsert, QueuedResult>({
    maxBatch: 50,
    write: (items) =>
      transactionRetryingConflicts(db, async (trx) => {
        const results = await insertQueuedResponses(trx, items, ledger.placeHoldsQuery);
        const created = results.flatMap((result) => (result.row ? [result.row] : []));
        created.sort((a, b) => a.conversation_id!.localeCompare(b.conversation_id!));
        for (const row of created) await appendTurnInput(trx, row);
        return results;
      }),
    onBatch: (size) => deps.metrics?.groupCommitBatch.observe({ writer: 'responses_in_conversations' }, size),
  });

  async function find(accountId: string, id: string): Promise<ResponseRow> {
    const row = await findResponse(db, accountId, id);
    if (!row) throw notFound('response', `No response with id ${id}.`);
    return row;
  }

  async function create(
    accountId: string,
    body: CreateResponseBody,
    /** The request's Idempotency-Key, bound to `body`. */
    idempotent?: IdempotentCall,
    /** The account as read with the API key in this request; read here when absent. */
    knownAccount?: { mcpEnabled: boolean },
    /** Subscribe to the new Response's events (for a caller that streams them or waits for the end). */
    options: { subscribe?: boolean } = {},
  ): Promise<CreateResult> {
    if (idempotent) {
      const replay = await findIdempotent(idempotent);
      if (replay) return { response: replay, replayed: true };
    }

    const account = knownAccount ?? (await readAccount(accountId));
    const assistant =
      body.assistant_id === undefined ? undefined : await findAssistant(db, accountId, body.assistant_id);
    if (body.assistant_id !== undefined && !assistant)
      throw notFound('assistant', `No assistant with id ${body.assistant_id}.`);
    const model = catalog.requireUsableModel(body.model ?? assistant!.model, 'response', 'llm');

    const mcpTools = (body.tools ?? []).filter((tool): tool is McpToolSpec => tool.type === 'mcp');
    if (mcpTools.length > 0 || (body.tool_choice as { type?: string } | undefined)?.type === 'mcp') {
      if (!account.mcpEnabled)
        throw forbidden(
          'mcp',
          'Remote MCP tools are not enabled for this account; ask an administrator to enable them.',
        );
      validateMcpTools(mcpTools, body.tool_choice, deps.allowPrivateNetworks);
      if (!model.functionCalling)
        throw invalidRequest('mcp', `Model ${model.code} cannot call tools, so it cannot use MCP tools.`);
    }
    const functionTools: FunctionToolSpec[] = body.tools
      ? body.tools.filter((tool): tool is FunctionToolSpec => tool.type === 'function')
      : assistantFunctionTools(assistant?.tools ?? []);
    if (functionTools.length > 0 && !model.functionCalling) {
      throw invalidRequest('response', `Model ${model.code} does not support function calling.`);
    }
    assertToolChoiceMatches(body.tool_choice, functionTools, mcpTools);
    if (body.stream && !model.streaming)
      throw invalidRequest('response', `Model ${model.code} does not support streaming.`);
    if (body.metadata?.webhook_url !== undefined) {
      validateOutboundUrl(body.metadata.webhook_url, { allowPrivateNetworks: deps.allowPrivateNetworks }, 'response');
    }

    const conversationId = typeof body.conversation === 'string' ? body.conversation : body.conversation?.id;
    if (conversationId) {
      const conversation = await findConversation(db, accountId, conversationId);
      if (!conversation) throw notFound('conversation', `No conversation with id ${conversationId}.`);
    }
    if (body.previous_response_id) await find(accountId, body.previous_response_id);

    const request: ResponseRequest = {
      input: normaliseInput(body.input),
      instructions: body.instructions ?? assistant?.instructions ?? null,
      temperature: body.temperature ?? assistant?.temperature ?? null,
      top_p: body.top_p ?? null,
      reasoning_effort: body.reasoning_effort ?? assistant?.reasoning_effort ?? null,
      verbosity: body.verbosity ?? null,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      message_limit: body.message_limit ?? null,
      truncation: body.truncation ?? 'disabled',
      tools: [...functionTools, ...mcpTools],
      tool_choice: body.tool_choice ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      stream: body.stream ?? false,
      ...(body.text?.format && body.text.format.type !== 'text' ? { text_format: body.text.format } : {}),
      ...(conversationId ? { input_in_conversation: true as const } : {}),
    };
    if (request.text_format && !model.structuredOutputs) {
      throw invalidRequest(
        'response',
        `Model ${model.code} does not support structured output (text.format ${request.text_format.type}).`,
      );
    }
    if (request.max_output_tokens !== null && model.maxOutput > 0 && request.max_output_tokens > model.maxOutput) {
      throw invalidRequest('response', `max_output_tokens exceeds the limit of ${model.code} (${model.maxOutput}).`);
    }
    const prompt = await buildPrompt(
      db,
      {
        account_id: accountId,
        conversation_id: conversationId ?? null,
        previous_response_id: body.previous_response_id ?? null,
        request,
      },
      model.contextWindow,
    );
    assertCallsAnswered(request, prompt.items);
    if (!prompt.fits) {
      throw invalidRequest('response', promptTooLongMessage(prompt, model), 'context_length_exceeded');
    }

    const id = newId('resp');
    // The hold (its debit at finalisation settles it). An open output cap lowered to what the balance pays shows
    // as the Response's max_output_tokens; the request stored records what the hold covers.
    const cap = outputCapOf(request.max_output_tokens, model.maxOutput);
    const inputBound = promptTokenBound({
      instructions: prompt.instructions,
      items: prompt.items,
      tools: functionTools,
    });
    const { hold, capFor } = generationHold({
      accountId,
      operationKey: `response:${id}`,
      jobId: id,
      price: model.price,
      inputBound,
      cap,
      capFixed: request.max_output_tokens !== null,
    });
    const placement = holdPlacement(hold);
    const requestHeld = (held: number): ResponseRequest => {
      const heldCap = capFor(held);
      return {
        ...request,
        max_output_tokens: heldCap < cap ? heldCap : request.max_output_tokens,
        hold: { input_tokens: inputBound, output_tokens: heldCap },
      };
    };
    const releaseHold = () => ledger.release(accountId, `response:${id}`).catch(() => undefined);

    // The engine admits the Response's job (engine.admit): its row goes into the creation's statement, already claimed
    // when this process has a free slot to run it at once. A synchronous or streamed Response run here is written
    // started as well (in_progress, with both lifecycle events) and handed to its first step, which then has nothing
    // to write: its creator is the only one who can see it before that step would have run (a background Response is
    // answered `queued`).
    let follower: Follower | undefined;
    const admitted = await engine
      .admit({ kind: 'response', accountId }, async (admission): Promise<Admitted<ResponseRow | null>> => {
        const startNow = admission.runsHere && (body.stream === true || body.background === false);
        const initialEvents = startNow ? [createdEvent(id), inProgressEvent(id)] : [createdEvent(id)];
        const row = await write((held: number): QueuedInsert => ({
          response: {
            id,
            account_id: accountId,
            started: startNow,
            background: body.background ?? true,
            model: model.code,
            vendor: model.vendor,
            assistant_id: assistant?.id ?? null,
            conversation_id: conversationId ?? null,
            previous_response_id: body.previous_response_id ?? null,
            request: requestHeld(held),
            metadata: body.metadata ?? {},
          },
          initialEvents,
          job: admission.outboxColumns,
        }));
        if (!row) return { jobId: undefined, result: null };
        // Subscribed before the job can write, knowing what is stored (the initial events): the follower needs no
        // initial read. Nobody else can be following a Response whose id has not been returned yet, so the
        // initial events are not announced.
        if (options.subscribe) follower = events.subscribe(responseStream(id), -1, initialEvents);
        const handed: HandedRow | undefined = startNow
          ? { row, nextSequence: initialEvents.length, startedAtCreation: true }
          : undefined;
        return { jobId: id, handoff: handed, result: row };
      })
      .catch((error: unknown) => {
        follower?.close();
        throw error;
      });
    if (!admitted) {
      const replay = await findIdempotent(idempotent!);
      if (!replay) throw stillRunning();
      return { response: replay, replayed: true };
    }
    recordJobStarted(deps.metrics, 'response', model);
    return { response: admitted, replayed: false, follower };

    /**
     * Writes the Response with its hold (and its Idempotency-Key); null when a concurrent request with the key won.
     * Without a key, the hold is placed by the creation's own statement (one round trip and commit less before the
     * first token), which writes the Response only if the hold comes out whole; a hold the balance can pay only in
     * part is kept and the Response written again for it. With a key, the key is claimed, the hold placed and the
     * Response written in one transaction: whatever fails, nothing stays held.
     */
    async function write(insert: (held: number) => QueuedInsert): Promise<ResponseRow | null> {
      if (idempotent) {
        return transactionRetryingConflicts(db, async (trx) => {
          if (!(await deps.idempotency.claimCreation(trx, idempotent, id))) return null;
          const [created] = await insertQueuedResponses(trx, [insert(await ledger.hold(hold, trx))]);
          if (created!.row!.conversation_id) await appendTurnInput(trx, created!.row!);
          return created!.row!;
        });
      }
      const insertQueued = conversationId ? insertQueuedInConversation : insertQueuedAlone;
      const created = await insertQueued({ ...insert(placement.amount), hold: placement });
      if (created.row) return created.row;
      if (holdRefused(placement, created.holdInEffect)) throw await ledger.refusal(placement);
      // A hold the first statement placed for a Response it did not write: ours to release if the second fails.
      try {
        return (await insertQueued(insert(created.holdInEffect!))).row!;
      } catch (error) {
        await releaseHold();
        throw error;
      }
    }
  }

  /** docs/api-decisions.md 17: the Response the key created, as it stands now (400 for another body). */
  async function findIdempotent(idempotent: IdempotentCall): Promise<ResponseRow | undefined> {
    const id = await deps.idempotency.findCreation(idempotent);
    if (!id) return undefined;
    const stored = await findResponseById(db, id);
    // The key still guards against running twice, but a deleted Response is not served again.
    if (stored?.deleted_at)
      throw notFound('response', `The Response created with this Idempotency-Key (${stored.id}) was deleted.`);
    return stored;
  }

  /** Waits for the terminal event of a Response and returns its final state. */
  async function waitForFinal(
    accountId: string,
    id: string,
    signal?: AbortSignal,
    follower?: Follower,
  ): Promise<ResponseWire> {
    const stream = responseStream(id);
    for await (const event of follower ? follower.events(signal) : events.follow(stream, -1, signal)) {
      if (stream.isFinal(event)) return event.response as ResponseWire;
    }
    return responseToWire(await find(accountId, id));
  }

  /** api-decisions 15: cancel from queued/in_progress; again on cancelled is a no-op; otherwise 400. */
  async function cancel(accountId: string, id: string): Promise<ResponseWire> {
    const row = await find(accountId, id);
    if (row.status === 'cancelled') return responseToWire(row);
    if (isFinalStatus(row.status)) {
      throw invalidRequest(
        'response',
        `Response ${id} is ${row.status} and can no longer be cancelled.`,
        'not_cancellable',
      );
    }
    await markCancelRequested(db, id);
    await engine.cancel({ id, kind: 'response' });
    // The workflow finalises the cancel (aborting the vendor call first). If its worker is unreachable, answer
    // with the current state after a bound rather than hang; the cancel request stays recorded and applies.
    const final = await waitForFinal(accountId, id, AbortSignal.timeout(CANCEL_WAIT_MS));
    // The generation finished before the cancel could stop it: the cancel lost the race (api-decisions 15).
    if (isFinalStatus(final.status) && final.status !== 'cancelled') {
      throw invalidRequest(
        'response',
        `Response ${id} ${final.status} before the cancel took effect.`,
        'not_cancellable',
      );
    }
    return final;
  }

  async function remove(accountId: string, id: string) {
    const row = await find(accountId, id);
    if (!isFinalStatus(row.status)) {
      // It may finish between the read and the cancel: then there is nothing left to cancel.
      await cancel(accountId, id).catch((error) => {
        if (!(ApiError.isInstance(error) && error.code === 'response.not_cancellable')) throw error;
      });
    }
    await markDeleted(db, accountId, id);
    return { id, object: 'response.deleted' as const, deleted: true as const };
  }

  /** The account as creation needs it, when the request did not bring it. */
  async function readAccount(accountId: string) {
    const account = await findAccount(db, accountId);
    if (!account) throw notFound('response', `No account with id ${accountId}.`);
    return { mcpEnabled: account.mcp_enabled };
  }

  /**
   * A page of the input items a Response was created with (OpenAI's `input_items`), newest first by default as
   * OpenAI's are. The items live in the Response's request, so the page is cut from that array by item id.
   */
  async function inputItems(
    accountId: string,
    id: string,
    query: PageQuery,
  ): Promise<Page<{ id: string; item: InputItem }>> {
    const row = await find(accountId, id);
    const all = row.request.input.map((item, index) => ({ id: inputItemId(row.id, index, item), item }));
    const ordered = (query.order ?? 'desc') === 'desc' ? all.reverse() : all;
    const cursor = query.after ?? query.before;
    const at = cursor === undefined ? -1 : ordered.findIndex((entry) => entry.id === cursor);
    if (cursor !== undefined && at < 0)
      throw notFound('response', `No input item with id ${cursor} in response ${id}.`);
    const limit = query.limit ?? 20;
    if (query.before !== undefined) {
      const start = Math.max(0, at - limit);
      return { rows: ordered.slice(start, at), hasMore: start > 0 };
    }
    const rows = ordered.slice(at + 1, at + 1 + limit);
    return { rows, hasMore: at + 1 + limit < ordered.length };
  }

  return { create, find, waitForFinal, cancel, remove, inputItems };
}

export type ResponsesService = ReturnType<typeof createResponsesService>;

function normaliseInput(input: CreateResponseBody['input']): InputItem[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return input.map((item): InputItem => {
    if (item.type === 'function_call_output')
      return { type: 'function_call_output', call_id: item.call_id, output: item.output };
    if (item.type === 'function_call')
      return { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments };
    return { type: 'message', role: item.role, content: item.content };
  });
}

/**
 * A tool choice must be satisfiable by the Response's function tools (its own or its Assistant's): vendors
 * refuse `required` without tools or a named function that is not offered, after we would have started.
 */
/**
 * Every `function_call_output` of the input answers a `function_call` the model made: in this input, the previous
 * Response or the conversation (the items of the prompt). An unknown `call_id` is a 400 naming it, as OpenAI's is,
 * not an output silently passed to a model that never asked for it. Not checked when message_limit or automatic
 * truncation may have left the call out of the prompt.
 */
function assertCallsAnswered(request: ResponseRequest, items: ReadonlyArray<{ type: string; callId?: string }>) {
  if (request.message_limit !== null || request.truncation !== 'disabled') return;
  const calls = new Set(items.filter((item) => item.type === 'function_call').map((item) => item.callId));
  request.input.forEach((item, index) => {
    if (item.type === 'function_call_output' && !calls.has(item.call_id)) {
      throw invalidRequest(
        'response',
        `input[${index}]: no function call with call_id "${item.call_id}" in this input, its previous Response or its conversation.`,
      );
    }
  });
}

function assertToolChoiceMatches(
  choice: CreateResponseBody['tool_choice'],
  functionTools: FunctionToolSpec[],
  mcpTools: McpToolSpec[],
) {
  if (choice === 'required' && functionTools.length === 0 && mcpTools.length === 0) {
    throw invalidRequest('response', 'tool_choice "required" needs at least one function or MCP tool.');
  }
  if (
    typeof choice === 'object' &&
    choice.type === 'function' &&
    !functionTools.some((tool) => tool.name === choice.name)
  ) {
    throw invalidRequest(
      'response',
      `tool_choice names the function ${choice.name}, which is not among the Response's function tools.`,
    );
  }
}

/**
 * The MCP tools of a request (spec "Responses", MCP tool): labels unique, approval `never`, an https
 * server_url that passes the SSRF guard (http and private addresses only with
 * OUTBOUND_ALLOW_PRIVATE_NETWORKS), and an MCP tool_choice naming one of them. Each refusal is a 400
 * `mcp.invalid_request`; the guard checks the address again when connecting.
 */
function validateMcpTools(
  tools: McpToolSpec[],
  choice: CreateResponseBody['tool_choice'],
  allowPrivateNetworks: boolean,
) {
  const labels = new Set<string>();
  for (const [index, tool] of tools.entries()) {
    const field = `tools[${index}]`;
    if (labels.has(tool.server_label))
      throw invalidRequest(
        'mcp',
        `${field}.server_label "${tool.server_label}" is used twice; labels must be unique within the request.`,
      );
    labels.add(tool.server_label);
    if (tool.require_approval !== 'never')
      throw invalidRequest('mcp', `${field}.require_approval must be "never" (the only supported mode).`);
    validateOutboundUrl(
      tool.server_url,
      { allowPrivateNetworks, requireHttps: !allowPrivateNetworks, field: `${field}.server_url` },
      'mcp',
    );
    for (const name of Object.keys(tool.headers ?? {})) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
        throw invalidRequest('mcp', `${field}.headers has an invalid header name.`);
      if (name.toLowerCase() === 'authorization')
        throw invalidRequest('mcp', `${field}.headers must not set Authorization; use authorization.`);
    }
  }
  if (typeof choice === 'object' && choice.type === 'mcp' && !labels.has(choice.server_label)) {
    throw invalidRequest(
      'mcp',
      `tool_choice names the MCP server "${choice.server_label}", which is not among the request's MCP tools.`,
    );
  }
}
