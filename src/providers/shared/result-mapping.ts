import type { FinishReason as AiFinishReason, LanguageModelUsage } from 'ai';
import type { FinishReason, TokenCounts, ToolCall } from '../provider';

export function toFinishReason(reason: AiFinishReason): FinishReason {
  switch (reason) {
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    default:
      return 'other';
  }
}

/** Vendors that report no usage (or an interrupted stream) count as zero, never as NaN. */
export function toTokenCounts(usage: LanguageModelUsage | undefined): TokenCounts {
  return { inputTokens: countOf(usage?.inputTokens), outputTokens: countOf(usage?.outputTokens) };
}

export function countOf(value: number | undefined): number {
  return value !== undefined && Number.isFinite(value) ? value : 0;
}

/** The SDK parses tool input; the port carries it as JSON text (an unparsable input stays as the vendor's text). */
export function toToolCall(call: { toolCallId: string; toolName: string; input: unknown }): ToolCall {
  return {
    callId: call.toolCallId,
    name: call.toolName,
    arguments: typeof call.input === 'string' ? call.input : JSON.stringify(call.input ?? {}),
  };
}
