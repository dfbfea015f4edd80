import type { Db } from '../db/database';
import type { PromptItem } from '../providers/provider';
import { estimateTokens, itemTokens, type Prompt } from '../responses/prompt';
import { listLatestMessagesWithin } from './threads.repository';
import type { RunRow } from './runs.table';

/** A context window unknown to the catalog reads history only this far (as Responses do). */
const MAX_HISTORY_TOKENS = 2_000_000;

/**
 * What the model sees in a Run: the Assistant's instructions and the Run's additional ones, the thread's latest
 * messages (at most `message_limit`) that fit the context window beside the Run's own transcript (each round's
 * tool calls and their outputs), oldest first. Older messages that do not fit are left out, as the Assistants
 * API's `auto` truncation does; it does not fit only when not even the newest message does.
 */
export async function buildRunPrompt(db: Db, run: RunRow, contextWindow: number): Promise<Prompt> {
  const instructions =
    [run.instructions, run.request.additional_instructions].filter((part) => part).join('\n\n') || undefined;
  const transcript: PromptItem[] = run.transcript.flatMap((round) => [
    ...round.calls.map((call): PromptItem => ({
      type: 'function_call',
      callId: call.id,
      name: call.name,
      arguments: call.arguments,
    })),
    ...round.calls.map((call): PromptItem => ({
      type: 'function_call_output',
      callId: call.id,
      name: call.name,
      output: call.output ?? '',
    })),
  ]);
  const fixed = estimateTokens(instructions ?? '') + transcript.reduce((sum, item) => sum + itemTokens(item), 0);
  const budget = contextWindow > 0 ? contextWindow : Number.POSITIVE_INFINITY;
  const latest = await listLatestMessagesWithin(db, run.thread_id, {
    limit: run.request.message_limit ?? undefined,
    tokenBudget: Math.max(0, Math.min(budget, MAX_HISTORY_TOKENS) - fixed),
  });
  const history = latest.rows.map((message): PromptItem => ({
    type: 'message',
    role: message.role,
    text: message.content.map((part) => part.text).join(''),
  }));
  const historyTokens = history.reduce((sum, item) => sum + itemTokens(item), 0);
  const nothingFits = history.length === 0 && !latest.complete;
  return {
    instructions,
    items: [...history, ...transcript],
    estimatedTokens: fixed + (nothingFits ? latest.tokensSeen : historyTokens),
    fits: !nothingFits && fixed <= budget,
  };
}
