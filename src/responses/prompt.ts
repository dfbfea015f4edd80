import type { ConversationItemRow } from '../conversations/conversations.table';
import { listRecentItems } from '../conversations/conversations.repository';
import type { Db } from '../db/database';
import type { PromptItem } from '../providers/provider';
import type { InputItem, OutputItem } from './response-types';
import type { ResponseRow } from './responses.table';

/**
 * Builds what the model sees: history (Conversation items, or the previous_response_id chain), then the
 * new input. `message_limit` keeps the latest N history items first; `truncation: auto` then drops the oldest
 * until the estimate fits the context window (DECISIONS.md 19).
 */
export interface Prompt {
  instructions?: string;
  items: PromptItem[];
  estimatedTokens: number;
  fits: boolean;
}

const MAX_CHAIN = 200;

export async function buildPrompt(
  db: Db,
  response: Pick<ResponseRow, 'account_id' | 'conversation_id' | 'previous_response_id' | 'request'>,
  contextWindow: number,
): Promise<Prompt> {
  const request = response.request;
  let history: PromptItem[] = [];
  if (response.conversation_id) {
    const rows = await listRecentItems(db, response.conversation_id, request.message_limit ?? undefined);
    history = rows.map(conversationItemToPrompt);
  } else if (response.previous_response_id) {
    history = await chainHistory(db, response.account_id, response.previous_response_id);
    if (request.message_limit !== null) history = request.message_limit > 0 ? history.slice(-request.message_limit) : [];
  }
  const input = request.input.map(inputItemToPrompt);
  const instructions = request.instructions ?? undefined;
  const fixed = estimateTokens(instructions ?? '') + input.reduce((sum, item) => sum + itemTokens(item), 0);
  let historyTokens = history.reduce((sum, item) => sum + itemTokens(item), 0);
  const budget = contextWindow > 0 ? contextWindow : Number.POSITIVE_INFINITY;
  if (request.truncation === 'auto') {
    while (history.length > 0 && fixed + historyTokens > budget) historyTokens -= itemTokens(history.shift()!);
  }
  const estimatedTokens = fixed + historyTokens;
  return { instructions, items: [...history, ...input], estimatedTokens, fits: estimatedTokens <= budget };
}

/** Input and output of each earlier Response in the chain, oldest first. */
async function chainHistory(db: Db, accountId: string, previousId: string): Promise<PromptItem[]> {
  const chain: Array<Pick<ResponseRow, 'request' | 'output' | 'previous_response_id' | 'deleted_at'>> = [];
  let id: string | null = previousId;
  while (id && chain.length < MAX_CHAIN) {
    const row: Pick<ResponseRow, 'request' | 'output' | 'previous_response_id' | 'deleted_at'> | undefined = await db
      .selectFrom('responses')
      .select(['request', 'output', 'previous_response_id', 'deleted_at'])
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) break;
    chain.unshift(row);
    id = row.previous_response_id;
  }
  // A deleted Response keeps the chain linked but its content no longer reaches a model.
  return chain
    .filter((row) => row.deleted_at === null)
    .flatMap((row) => [...row.request.input.map(inputItemToPrompt), ...row.output.flatMap(outputItemToPrompt)]);
}

export function inputItemToPrompt(item: InputItem): PromptItem {
  if (item.type === 'function_call_output') return { type: 'function_call_output', callId: item.call_id, output: item.output };
  return { type: 'message', role: item.role === 'developer' ? 'system' : item.role, text: item.content };
}

export function outputItemToPrompt(item: OutputItem): PromptItem[] {
  if (item.type === 'function_call') return [{ type: 'function_call', callId: item.call_id, name: item.name, arguments: item.arguments }];
  const text = item.content.map((part) => part.text).join('');
  return text ? [{ type: 'message', role: 'assistant', text }] : [];
}

function conversationItemToPrompt(row: ConversationItemRow): PromptItem {
  if (row.type === 'function_call') return { type: 'function_call', callId: row.call_id ?? '', name: row.name ?? '', arguments: row.arguments ?? '' };
  if (row.type === 'function_call_output') return { type: 'function_call_output', callId: row.call_id ?? '', output: row.output ?? '' };
  const role = row.role === 'assistant' ? 'assistant' : row.role === 'user' ? 'user' : 'system';
  return { type: 'message', role, text: (row.content ?? []).map((part) => part.text).join('') };
}

/** A vendor-neutral estimate (≈4 characters per token) used only for context-window checks. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function itemTokens(item: PromptItem): number {
  switch (item.type) {
    case 'message':
      return estimateTokens(item.text) + 4;
    case 'function_call':
      return estimateTokens(item.name + item.arguments) + 4;
    case 'function_call_output':
      return estimateTokens(item.output) + 4;
  }
}
