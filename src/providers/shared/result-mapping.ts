import type { LanguageModelV3FinishReason, LanguageModelV3ToolCall, LanguageModelV3Usage } from '@ai-sdk/provider';
import type { FinishReason, TokenCounts, ToolCall } from '../provider';

export function toFinishReason(reason: LanguageModelV3FinishReason): FinishReason {
  switch (reason.unified) {
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
export function toTokenCounts(usage: LanguageModelV3Usage | undefined): TokenCounts {
  return { inputTokens: countOf(usage?.inputTokens.total), outputTokens: countOf(usage?.outputTokens.total) };
}

export function countOf(value: number | undefined): number {
  return value !== undefined && Number.isFinite(value) ? value : 0;
}

/** The port carries tool input as the vendor's JSON text; an empty input means no arguments (`{}`). */
export function toToolCall(call: Pick<LanguageModelV3ToolCall, 'toolCallId' | 'toolName' | 'input'>): ToolCall {
  return {
    callId: call.toolCallId,
    name: call.toolName,
    arguments: call.input.trim() === '' ? '{}' : call.input,
  };
}
