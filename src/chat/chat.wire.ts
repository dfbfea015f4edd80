import type { FinishReason } from '../providers/provider';
import type { ChatCompletion } from './chat.service';

/** What the legacy chat completions endpoint shows (api-decisions 8). */

/** api-decisions 8: `tools_calls` (sic, as the real service) and upper-case finish reasons. */
export function legacyCompletionToWire(completion: ChatCompletion) {
  return {
    created: completion.created,
    model: completion.model,
    message: { role: 'assistant' as const, content: completion.text },
    tools_calls: completion.toolCalls.map((call) => ({
      id: call.callId,
      type: 'function' as const,
      name: call.name,
      arguments: call.arguments,
    })),
    usage: {
      prompt_tokens: completion.inputTokens,
      completion_tokens: completion.outputTokens,
      total_tokens: completion.inputTokens + completion.outputTokens,
      cost: completion.cost,
    },
    finish_reason: finishReasonToWire(completion.finishReason, completion.toolCalls.length > 0),
  };
}

/** `other` (a vendor reason with no equivalent) is reported as a normal end: the text is all there is. */
function finishReasonToWire(
  reason: FinishReason,
  hasToolCalls: boolean,
): 'COMPLETE' | 'MAX_TOKENS' | 'TOOL_CALLS' | 'CONTENT_FILTER' {
  if (hasToolCalls || reason === 'tool_calls') return 'TOOL_CALLS';
  if (reason === 'length') return 'MAX_TOKENS';
  if (reason === 'content_filter') return 'CONTENT_FILTER';
  return 'COMPLETE';
}
