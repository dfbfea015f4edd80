import type { ConversationItemRow } from '../conversations/conversations.table';
import { listLatestItemsWithin } from '../conversations/conversations.repository';
import type { Db } from '../db/database';
import type { PromptItem } from '../providers/provider';
import { callResultForModel } from '../mcp/mcp-tools';
import type { McpCallItem } from '../mcp/mcp-types';
import type { InputItem, OutputItem } from './response-types';
import { turnStart } from './conversation-turns';
import { findChainLink } from './responses.repository';
import type { ResponseRow } from './responses.table';

/** What the model sees, with the estimate of its size against the context window. */
export interface Prompt {
  instructions?: string;
  items: PromptItem[];
  estimatedTokens: number;
  fits: boolean;
}

const MAX_CHAIN = 200;

/**
 * History is read only as far as it can matter: up to the context window (newest first), and for a model whose
 * window is unknown up to this many tokens. A conversation or chain may hold far more than fits in memory.
 */
const MAX_HISTORY_TOKENS = 2_000_000;

/**
 * Builds what the model sees: history (Conversation items, or the previous_response_id chain), then the
 * new input. `message_limit` keeps the latest N history items first; `truncation: auto` then drops the oldest
 * until the estimate fits the context window (api-decisions 19).
 */
export async function buildPrompt(
  db: Db,
  response: Pick<ResponseRow, 'account_id' | 'conversation_id' | 'previous_response_id' | 'request'> & {
    /** The Response's id once it exists (its run): its own items in the conversation are not its history. */
    id?: string;
  },
  contextWindow: number,
): Promise<Prompt> {
  const request = response.request;
  const input = request.input.map(inputItemToPrompt);
  const instructions = request.instructions ?? undefined;
  const fixed = estimateTokens(instructions ?? '') + input.reduce((sum, item) => sum + itemTokens(item), 0);
  const budget = contextWindow > 0 ? contextWindow : Number.POSITIVE_INFINITY;
  const historyBudget = Math.max(0, Math.min(budget, MAX_HISTORY_TOKENS) - fixed);
  const limit = request.message_limit ?? undefined;
  // Read as far as the budget; what did not fit is left out (truncation: auto) or makes the prompt too long.
  let history: PromptItem[] = [];
  let left = { complete: true, tokensSeen: 0 };
  if (response.conversation_id) {
    // A Response's history is what its conversation held before its input (api-decisions 30): not its own input
    // (sent once, as its input), not a later Response's input, and no item still in progress.
    const own = response.id === undefined ? undefined : { ...response, id: response.id };
    const latest = await listLatestItemsWithin(db, response.conversation_id, {
      limit,
      tokenBudget: historyBudget,
      ...(own ? { responseId: own.id, beforeSeq: await turnStart(db, own) } : {}),
    });
    history = latest.rows.flatMap(conversationItemToPrompt);
    left = latest;
  } else if (response.previous_response_id) {
    const chain = await chainHistory(db, response.account_id, response.previous_response_id, {
      limit,
      tokenBudget: historyBudget,
    });
    history = chain.items;
    left = chain;
  }
  let historyTokens = history.reduce((sum, item) => sum + itemTokens(item), 0);
  if (request.truncation === 'auto') {
    while (history.length > 0 && fixed + historyTokens > budget) historyTokens -= itemTokens(history.shift()!);
  } else if (!left.complete) {
    // Disabled truncation and history beyond the budget: it does not fit, however much more there is.
    return { instructions, items: [...history, ...input], estimatedTokens: fixed + left.tokensSeen, fits: false };
  }
  const estimatedTokens = fixed + historyTokens;
  return { instructions, items: [...history, ...input], estimatedTokens, fits: estimatedTokens <= budget };
}

/** Why a prompt that does not fit is refused, at creation or (when its conversation grew meanwhile) at its run. */
export function promptTooLongMessage(prompt: Prompt, model: { code: string; contextWindow: number }): string {
  return `The input (${prompt.estimatedTokens} tokens or more with history, by estimate) does not fit the context window of ${model.code} (${model.contextWindow}); use truncation: "auto", message_limit, or a shorter input.`;
}

/**
 * Input and output of the earlier Responses in the chain, oldest first: the latest `limit` items that fit
 * `tokenBudget`, read newest first and only their input and output (not, say, their tools).
 */
async function chainHistory(
  db: Db,
  accountId: string,
  previousId: string,
  options: { limit?: number; tokenBudget: number },
): Promise<{ items: PromptItem[]; complete: boolean; tokensSeen: number }> {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const newestFirst: PromptItem[] = [];
  let tokensSeen = 0;
  let id: string | null = previousId;
  for (let links = 0; id && links < MAX_CHAIN && newestFirst.length < limit; links++) {
    const row = await findChainLink(db, accountId, id);
    if (!row) break;
    id = row.previous_response_id;
    // A deleted Response keeps the chain linked but its content no longer reaches a model.
    if (row.deleted_at !== null) continue;
    const items = [...row.input.map(inputItemToPrompt), ...row.output.flatMap(outputItemToPrompt)];
    for (const item of items.reverse()) {
      if (newestFirst.length >= limit) break;
      tokensSeen += itemTokens(item);
      if (tokensSeen > options.tokenBudget) return { items: newestFirst.reverse(), complete: false, tokensSeen };
      newestFirst.push(item);
    }
  }
  return { items: newestFirst.reverse(), complete: true, tokensSeen };
}

export function inputItemToPrompt(item: InputItem): PromptItem {
  if (item.type === 'function_call_output')
    return { type: 'function_call_output', callId: item.call_id, output: item.output };
  if (item.type === 'function_call')
    return { type: 'function_call', callId: item.call_id, name: item.name, arguments: item.arguments };
  return { type: 'message', role: item.role === 'developer' ? 'system' : item.role, text: item.content };
}

export function outputItemToPrompt(item: OutputItem): PromptItem[] {
  if (item.type === 'function_call')
    return [{ type: 'function_call', callId: item.call_id, name: item.name, arguments: item.arguments }];
  if (item.type === 'mcp_list_tools') return [];
  if (item.type === 'mcp_call') return mcpCallToPrompt(item);
  const text = item.content.map((part) => part.text).join('');
  return text ? [{ type: 'message', role: 'assistant', text }] : [];
}

function conversationItemToPrompt(row: ConversationItemRow): PromptItem[] {
  if (row.type === 'function_call')
    return [{ type: 'function_call', callId: row.call_id ?? '', name: row.name ?? '', arguments: row.arguments ?? '' }];
  if (row.type === 'function_call_output')
    return [{ type: 'function_call_output', callId: row.call_id ?? '', output: row.output ?? '' }];
  if (row.type === 'mcp_list_tools') return [];
  if (row.type === 'mcp_call')
    return mcpCallToPrompt({
      id: row.id,
      server_label: row.server_label ?? '',
      name: row.name ?? '',
      arguments: row.arguments ?? '',
      output: row.output,
      error: row.error,
    });
  const role = row.role === 'assistant' ? 'assistant' : row.role === 'user' ? 'user' : 'system';
  return [{ type: 'message', role, text: (row.content ?? []).map((part) => part.text).join('') }];
}

/**
 * An MCP call as the model sees it: a function call under the tool's own name (a tool renamed for a clash,
 * src/mcp/mcp-tools.ts, still appears under its own name in history) and its result, paired by the item id.
 */
function mcpCallToPrompt(
  item: Pick<McpCallItem, 'id' | 'server_label' | 'name' | 'arguments' | 'output' | 'error'>,
): PromptItem[] {
  return [
    { type: 'function_call', callId: item.id, name: item.name, arguments: item.arguments },
    { type: 'function_call_output', callId: item.id, name: item.name, output: callResultForModel(item) },
  ];
}

/** A vendor-neutral estimate (≈4 characters per token) used only for context-window checks. */
/**
 * An upper bound of the input tokens a vendor can count for a prompt, for billing holds (estimateTokens is a
 * typical count, which a hold must not rely on): UTF-8 bytes (no tokenizer in use makes a token of less than a
 * byte) of the instructions, items and tool definitions, plus an allowance for the framing of each item.
 */
export function promptTokenBound(prompt: { instructions?: string; items: PromptItem[]; tools?: unknown[] }): number {
  let bytes = Buffer.byteLength(prompt.instructions ?? '') + 16;
  for (const item of prompt.items) {
    const text =
      item.type === 'message' ? item.text : item.type === 'function_call' ? item.name + item.arguments : item.output;
    bytes += Buffer.byteLength(text) + 8;
  }
  if (prompt.tools && prompt.tools.length > 0) bytes += Buffer.byteLength(JSON.stringify(prompt.tools));
  return bytes;
}

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function itemTokens(item: PromptItem): number {
  switch (item.type) {
    case 'message':
      return estimateTokens(item.text) + 4;
    case 'function_call':
      return estimateTokens(item.name + item.arguments) + 4;
    case 'function_call_output':
      return estimateTokens(item.output) + 4;
  }
}
