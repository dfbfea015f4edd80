import type { Ledger } from '../billing/ledger';
import { generationHold, outputCapOf } from '../billing/generation-hold';
import { priceCall } from '../billing/pricing';
import { promptTokenBound } from '../responses/prompt';
import type { CatalogModel, ModelType } from '../catalog/catalog-types';
import { invalidRequest, type ErrorArea } from '../errors';
import { newId } from '../ids';
import type { FinishReason, FunctionTool, LanguageModel, PromptItem, ToolCall, ToolChoice } from '../providers/provider';
import { vendorErrorToApiError } from '../providers/provider-errors';
import type { ChatMessage, ChatTool } from './chat.schema';

/** The slices of AppDeps this service uses (structural, so it does not care how they are built). */
export interface ChatDeps {
  ledger: Ledger;
  catalog: { requireUsableModel(code: string, area: ErrorArea, type: ModelType): CatalogModel | Promise<CatalogModel> };
  providers: { languageModel(vendorCode: string): LanguageModel };
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

/**
 * Synchronous chat for the legacy v2 and the v1 endpoints: one vendor call, billed once per request
 * (service `chat`, DECISIONS.md 10), refused with 402 before the call when the balance is ≤ 0.
 */
export function createChatService(deps: ChatDeps) {
  /** `requestId`: the id to key the debit by, when an Idempotency-Key chose it (a retried call bills once). */
  async function complete(accountId: string, request: ChatRequest, requestId = newId('req')): Promise<ChatCompletion> {
    const created = Math.floor(Date.now() / 1000);
    const tools = request.tools ? toFunctionTools(request.tools) : undefined;
    const model = await deps.catalog.requireUsableModel(request.model, 'chat', 'llm');
    if (!model.protocols.includes('chat_completions')) {
      throw invalidRequest('chat', `Model ${model.code} does not support chat completions; use POST /v2/responses.`);
    }
    if (tools?.length && !model.functionCalling) {
      throw invalidRequest('chat', `Model ${model.code} does not support function calling.`);
    }
    if (request.maxTokens !== undefined && model.maxOutput > 0 && request.maxTokens > model.maxOutput) {
      throw invalidRequest('chat', `max_tokens is at most ${model.maxOutput} for model ${model.code}.`);
    }
    // The hold (DESIGN.md "Money: holds"), settled by the debit, released if the call fails.
    const operationKey = `chat:${requestId}`;
    const items = request.items ?? request.messages.map(toPromptItem);
    const plan = generationHold({
      accountId,
      operationKey,
      price: model.price,
      inputBound: promptTokenBound({ instructions: request.instructions, items, tools }),
      cap: outputCapOf(request.maxTokens, model.maxOutput),
      capFixed: request.maxTokens !== undefined,
    });
    const { result, cost } = await deps.ledger.withHold(plan.hold, async (held) => {
      let generated: Awaited<ReturnType<LanguageModel['generateText']>>;
      try {
        generated = await deps.providers.languageModel(model.vendor).generateText({
          model: model.upstreamId,
          instructions: request.instructions,
          items,
          tools: tools?.length ? tools : undefined,
          toolChoice: tools?.length ? request.toolChoice : undefined,
          parallelToolCalls: request.parallelToolCalls,
          temperature: request.temperature,
          topP: request.topP,
          maxOutputTokens: plan.capFor(held),
        });
      } catch (error) {
        throw vendorErrorToApiError(error, 'chat');
      }
      const { inputTokens, outputTokens } = generated.usage;
      const priced = priceCall(model.price, { input: inputTokens, output: outputTokens });
      await deps.ledger.debit({
        accountId,
        amount: priced.amount,
        operationKey,
        metadata: { source: 'api', vendor: model.vendor, model: model.code, service: 'chat', request_id: requestId },
        usage: { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens },
      });
      return { result: generated, cost: priced.cost };
    });
    const { inputTokens, outputTokens } = result.usage;
    return {
      created,
      model: model.code,
      text: result.text,
      toolCalls: result.toolCalls,
      finishReason: result.finishReason,
      inputTokens,
      outputTokens,
      cost,
      requestId,
    };
  }

  return { complete };
}

export type ChatService = ReturnType<typeof createChatService>;

const toPromptItem = (message: ChatMessage): PromptItem => ({ type: 'message', role: message.role, text: message.content });

/** Flat and nested function tools become the port's form; server-side tools are refused (see chat.schema.ts). */
function toFunctionTools(tools: ChatTool[]): FunctionTool[] {
  return tools.map((tool, index) => {
    if (tool.type !== 'function') {
      throw invalidRequest('chat', `tools[${index}]: ${tool.type} tools are not supported by chat completions; only function tools are.`);
    }
    const definition = 'function' in tool ? tool.function : tool;
    return {
      name: definition.name,
      description: definition.description,
      parameters: definition.parameters ?? { type: 'object', properties: {} },
    };
  });
}
