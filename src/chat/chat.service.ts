import { holdPlacement, type HoldRequest, type Ledger } from '../billing/ledger';
import { generationHold, outputCapOf } from '../billing/generation-hold';
import { priceCall } from '../billing/pricing';
import { promptTokenBound } from '../responses/prompt';
import type { CatalogModel, ModelType } from '../catalog/catalog-types';
import { invalidRequest, type ErrorArea } from '../errors';
import { newId } from '../ids';
import type {
  FinishReason,
  FunctionTool,
  GenerateTextRequest,
  LanguageModel,
  GenerateTextResult,
  PromptItem,
  ResponseFormat,
  ServerTool,
  TextStreamPart,
  ToolCall,
  ToolChoice,
} from '../providers/provider';
import { vendorErrorToApiError } from '../providers/provider-errors';
import { languageModelFor, type RoutingDeps } from '../routing/routed-language-model';
import type { ChatMessage, ChatTool } from './chat.schema';

/** The slices of AppDeps this service uses (structural, so it does not care how they are built). */
export interface ChatDeps {
  ledger: Ledger;
  catalog: RoutingDeps['catalog'] & {
    requireUsableModel(code: string, area: ErrorArea, type: ModelType): CatalogModel | Promise<CatalogModel>;
  };
  providers: { languageModel(vendorCode: string): LanguageModel };
  /** Failovers and the traffic per target of routes. */
  metrics?: RoutingDeps['metrics'];
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  /** The conversation in the port's terms instead of `messages` (OpenAI's surface: tool calls and results). */
  items?: PromptItem[];
  instructions?: string;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  tools?: ChatTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
}

export interface ChatCompletion {
  /** Unix seconds, when the request was accepted. */
  created: number;
  model: string;
  text: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  inputTokens: number;
  outputTokens: number;
  /** Exact cost in kopecks (may be fractional); the debit is this rounded up. */
  cost: number;
  requestId: string;
}

/** One part of a streamed completion: text and tool calls as they come, then the whole completion, billed. */
export type ChatStreamPart =
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call'; call: ToolCall }
  | { type: 'completed'; completion: ChatCompletion };

/**
 * Chat for the legacy v2, the v1 and the OpenAI-compatible endpoints: one vendor call under a hold, billed once
 * per request (service `chat`, api-decisions 10), refused with 402 when the balance cannot pay, before anything the
 * vendor answered is used (the call starts beside the hold only for an account that evidently pays: `underHold`).
 */
export function createChatService(deps: ChatDeps) {
  /** Calls started ahead of their hold and not yet past it (at most CALLS_AHEAD_AT_ONCE). */
  let callsAhead = 0;

  /**
   * Places the hold and starts the vendor call (`start`, given the hold in effect): beside each other when the account
   * evidently pays (Ledger.paysAhead), the call then started with the whole hold's cap; otherwise the call after the
   * hold, as before. Answers once both are in, so nothing the vendor sent is used before the hold is placed. A hold
   * refused (402) aborts the call started ahead; a hold placed lower than asked (the balance was spent meanwhile, and
   * an open cap must now be lower) aborts it and starts the call again with the cap the hold pays. A call that fails
   * releases the hold. What it buys: the hold's round trip is no longer added to the vendor's time (issue 37,
   * bench/README.md). At most CALLS_AHEAD_AT_ONCE calls are ahead of their holds at once: past that the process is
   * busy enough that requests queue anyway, and starting every call early cost CPU at saturation (0.57 → 0.7-0.8
   * ms per request, a fifth fewer requests per second) without shortening the wait; it also bounds what wrong
   * guesses can cost at any moment. `discard` closes what a call aborted after it started answering left open (a
   * stream's iterator).
   */
  async function underHold<T>(
    hold: HoldRequest,
    start: (held: number, signal?: AbortSignal) => Promise<T>,
    discard?: (started: T) => Promise<unknown>,
  ): Promise<{ held: number; started: T }> {
    const released = async (error: unknown) => {
      await deps.ledger.release(hold.accountId, hold.operationKey).catch(() => undefined);
      return error;
    };
    if (callsAhead >= CALLS_AHEAD_AT_ONCE || !deps.ledger.paysAhead(hold)) {
      const held = await deps.ledger.hold(hold);
      try {
        return { held, started: await start(held) };
      } catch (error) {
        throw await released(error);
      }
    }
    const whole = holdPlacement(hold).amount;
    const ahead = new AbortController();
    const call = start(whole, ahead.signal);
    // Handled at once: a call that fails while the hold is still being placed is not an unhandled rejection.
    const outcome = call.then(
      (started) => ({ started }),
      (error: unknown) => ({ error }),
    );
    const abandon = async (why: string) => {
      ahead.abort(new DOMException(why, 'AbortError'));
      const abandoned = await outcome;
      if ('started' in abandoned) await discard?.(abandoned.started).catch(() => undefined);
    };
    let held: number;
    callsAhead++;
    try {
      held = await deps.ledger.hold(hold);
    } catch (error) {
      await abandon('The hold was refused.');
      throw error;
    } finally {
      callsAhead--;
    }
    if (held < whole) {
      await abandon('The hold was lowered.');
      try {
        return { held, started: await start(held) };
      } catch (error) {
        throw await released(error);
      }
    }
    const answered = await outcome;
    if ('error' in answered) throw await released(answered.error);
    return { held, started: answered.started };
  }

  /** Validates the request against its model and plans its hold; nothing is held or called yet. */
  async function prepare(accountId: string, request: ChatRequest, requestId: string) {
    const created = Math.floor(Date.now() / 1000);
    const tools = request.tools ? toFunctionTools(request.tools) : undefined;
    const model = await deps.catalog.requireUsableModel(request.model, 'chat', 'llm');
    if (!model.protocols.includes('chat_completions')) {
      throw invalidRequest('chat', `Model ${model.code} does not support chat completions; use POST /v2/responses.`);
    }
    const serverTools = request.tools?.some((tool) => tool.type !== 'function')
      ? toServerTools(request.tools, model, deps.providers.languageModel(model.vendor))
      : [];
    if ((tools?.length || serverTools.length) && !model.functionCalling) {
      throw invalidRequest('chat', `Model ${model.code} does not support function calling.`);
    }
    if (request.responseFormat && !model.structuredOutputs) {
      throw invalidRequest('chat', `Model ${model.code} does not support structured output (response_format).`);
    }
    if (request.maxTokens !== undefined && model.maxOutput > 0 && request.maxTokens > model.maxOutput) {
      throw invalidRequest('chat', `max_tokens is at most ${model.maxOutput} for model ${model.code}.`);
    }
    // The hold (docs/architecture.md, "Money: holds"), settled by the debit, released if the call fails.
    const operationKey = `chat:${requestId}`;
    const items = request.items ?? request.messages.map(toPromptItem);
    const plan = generationHold({
      accountId,
      operationKey,
      price: model.price,
      // Retrieved text is input too: each file search may add its results (about a chunk each) to the prompt.
      inputBound:
        promptTokenBound({ instructions: request.instructions, items, tools }) +
        serverTools.reduce(
          (sum, tool) =>
            sum + (tool.type === 'file_search' ? (tool.maxResults ?? FILE_SEARCH_RESULTS) * RETRIEVED_CHUNK_TOKENS : 0),
          0,
        ),
      cap: outputCapOf(request.maxTokens, model.maxOutput),
      capFixed: request.maxTokens !== undefined,
    });
    const call = (held: number): GenerateTextRequest => ({
      model: model.upstreamId,
      instructions: request.instructions,
      items,
      tools: tools?.length ? tools : undefined,
      serverTools: serverTools.length > 0 ? serverTools : undefined,
      toolChoice: tools?.length ? request.toolChoice : undefined,
      parallelToolCalls: request.parallelToolCalls,
      temperature: request.temperature,
      topP: request.topP,
      maxOutputTokens: plan.capFor(held),
      responseFormat: request.responseFormat,
    });

    /**
     * Debits the call's usage (settling the hold) and answers the completion; a debit that fails releases the hold.
     * `served`: the model that answered (a route's target, whose price and name the debit carries).
     */
    async function settle(result: GenerateTextResult, served: CatalogModel): Promise<ChatCompletion> {
      const { inputTokens, outputTokens } = result.usage;
      const priced = priceCall(served.price, { input: inputTokens, output: outputTokens });
      const route = model.route ? { route: model.code } : {};
      await deps.ledger
        .debit({
          accountId,
          cost: priced.exact,
          operationKey,
          metadata: {
            source: 'api',
            vendor: served.vendor,
            model: served.code,
            ...route,
            service: 'chat',
            request_id: requestId,
          },
          usage: {
            prompt_tokens: inputTokens,
            completion_tokens: outputTokens,
            total_tokens: inputTokens + outputTokens,
          },
        })
        .catch(async (error: unknown) => {
          await deps.ledger.release(accountId, operationKey).catch(() => undefined);
          throw error;
        });
      return { created, model: served.code, ...result, inputTokens, outputTokens, cost: priced.cost, requestId };
    }

    return { created, model, hold: plan.hold, call, settle };
  }

  /** `requestId`: the id to key the debit by, when an Idempotency-Key chose it (a retried call bills once). */
  async function complete(accountId: string, request: ChatRequest, requestId = newId('req')): Promise<ChatCompletion> {
    const { model, hold, call, settle } = await prepare(accountId, request, requestId);
    const languageModel = languageModelFor(model, deps);
    const { started: generated } = await underHold(hold, (held, signal) =>
      languageModel.model.generateText({ ...call(held), signal }).catch((error: unknown) => {
        throw vendorErrorToApiError(error, 'chat');
      }),
    );
    return settle(generated, languageModel.served());
  }

  /**
   * A streamed completion. Validation, the hold and the vendor's first part happen before this resolves, so
   * a refusal or a vendor that fails at once is an HTTP error, not a broken stream. A consumer that stops
   * early (its client went away) does not stop the generation: the rest is read and the whole call billed,
   * as the vendor bills it.
   */
  async function stream(
    accountId: string,
    request: ChatRequest,
    requestId = newId('req'),
  ): Promise<{ created: number; model: string; parts: AsyncIterable<ChatStreamPart> }> {
    const { created, model, hold, call, settle } = await prepare(accountId, request, requestId);
    // Before the hold: an unconfigured vendor is refused here, with nothing held.
    const routed = languageModelFor(model, deps);
    const { started: opened } = await underHold(
      hold,
      async (held, signal) => {
        // Opened here, under the hold's release: an adapter that throws as the call starts holds nothing after.
        const iterator = routed.model.streamText({ ...call(held), signal })[Symbol.asyncIterator]();
        try {
          return { iterator, first: await iterator.next() };
        } catch (error) {
          throw vendorErrorToApiError(error, 'chat');
        }
      },
      async ({ iterator }) => iterator.return?.(),
    );
    const upstream = opened.iterator;
    const next = async () => {
      try {
        return await upstream.next();
      } catch (error) {
        await deps.ledger.release(accountId, hold.operationKey).catch(() => undefined);
        throw vendorErrorToApiError(error, 'chat');
      }
    };
    const first = opened.first;

    async function* parts(): AsyncGenerator<ChatStreamPart> {
      const result: GenerateTextResult = {
        text: '',
        toolCalls: [],
        finishReason: 'other',
        usage: { inputTokens: 0, outputTokens: 0 },
      };
      const take = (part: TextStreamPart) => {
        if (part.type === 'text-delta') result.text += part.text;
        else if (part.type === 'tool-call')
          result.toolCalls.push({ callId: part.callId, name: part.name, arguments: part.arguments });
        else Object.assign(result, { finishReason: part.finishReason, usage: part.usage });
      };
      let step = first;
      let state: 'reading' | 'read' | 'failed' = 'reading';
      try {
        for (; !step.done; step = await next()) {
          take(step.value);
          if (step.value.type === 'text-delta') yield { type: 'text-delta', text: step.value.text };
          else if (step.value.type === 'tool-call') yield { type: 'tool-call', call: result.toolCalls.at(-1)! };
        }
        state = 'read';
      } catch (error) {
        state = 'failed';
        throw error;
      } finally {
        if (state === 'reading') {
          // The consumer left: read the rest and bill it (a vendor failure now only releases the hold).
          try {
            for (step = await next(); !step.done; step = await next()) take(step.value);
            await settle(result, routed.served());
          } catch {
            // next() or settle() released the hold; nobody is left to tell.
          }
        }
      }
      yield { type: 'completed', completion: await settle(result, routed.served()) };
    }

    // The first part is in: the model named is the one that answers (a route's target).
    return { created, model: routed.served().code, parts: parts() };
  }

  return { complete, stream };
}

export type ChatService = ReturnType<typeof createChatService>;

const toPromptItem = (message: ChatMessage): PromptItem => ({
  type: 'message',
  role: message.role,
  text: message.content,
});

/** How many chat calls of a process may be started ahead of their holds at once (createChatService, underHold). */
const CALLS_AHEAD_AT_ONCE = 8;

/** A file search's results when the request does not say how many (OpenAI's default). */
const FILE_SEARCH_RESULTS = 10;
/** What one retrieved result adds to the input, held for: a chunk (OpenAI's are 800 tokens) and its framing. */
const RETRIEVED_CHUNK_TOKENS = 1000;

/**
 * The server tools of a request (file search, code interpreter: chat.schema.ts) in the port's form, each checked
 * against the vendor: one the model's vendor does not run is a 400 naming the vendor (api-decisions 8).
 */
function toServerTools(tools: ChatTool[], model: CatalogModel, languageModel: LanguageModel): ServerTool[] {
  const runs = languageModel.serverTools ?? {};
  return tools.flatMap((tool, index): ServerTool[] => {
    if (tool.type === 'function') return [];
    if (!runs[tool.type])
      throw invalidRequest(
        'chat',
        `tools[${index}]: vendor ${model.vendor} (model ${model.code}) does not run ${tool.type} tools; use a model of a vendor that does, or function tools.`,
      );
    if (tool.type === 'file_search')
      return [{ type: 'file_search', storeIds: tool.vector_store_ids, maxResults: tool.max_num_results }];
    const container = tool.container;
    if (container !== undefined && !runs.code_interpreter?.containers)
      throw invalidRequest(
        'chat',
        `tools[${index}].container: vendor ${model.vendor} runs code in a sandbox of its own, which takes no container.`,
      );
    return [
      typeof container === 'string'
        ? { type: 'code_interpreter', container }
        : { type: 'code_interpreter', fileIds: container?.file_ids },
    ];
  });
}

/** Flat and nested function tools become the port's form; server tools are the vendor's (toServerTools). */
function toFunctionTools(tools: ChatTool[]): FunctionTool[] {
  return tools.flatMap((tool): FunctionTool[] => {
    if (tool.type !== 'function') return [];
    const definition = 'function' in tool ? tool.function : tool;
    return [
      {
        name: definition.name,
        description: definition.description,
        parameters: definition.parameters ?? { type: 'object', properties: {} },
      },
    ];
  });
}
