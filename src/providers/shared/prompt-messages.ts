import type { AssistantModelMessage, ModelMessage, ToolModelMessage } from 'ai';
import { ProviderError, type PromptItem } from '../provider';

/**
 * PromptItem[] → AI SDK ModelMessages. Consecutive assistant text and function calls become one assistant
 * message, and consecutive function outputs one tool message, because that is the shape the vendors
 * themselves use (Anthropic requires every tool_use of a turn to be answered in the next message).
 * A function output names its tool only by callId, so the name is taken from the call it answers.
 */
export function toModelMessages(items: readonly PromptItem[], vendor: string): ModelMessage[] {
  const toolNames = new Map<string, string>();
  for (const item of items) {
    if (item.type === 'function_call') toolNames.set(item.callId, item.name);
  }

  const messages: ModelMessage[] = [];
  const last = () => messages[messages.length - 1];

  for (const item of items) {
    switch (item.type) {
      case 'message': {
        if (item.role === 'assistant') {
          assistantMessage().content.push({ type: 'text', text: item.text });
        } else {
          messages.push({ role: item.role, content: item.text });
        }
        break;
      }
      case 'function_call': {
        assistantMessage().content.push({
          type: 'tool-call',
          toolCallId: item.callId,
          toolName: item.name,
          input: parseArguments(item.arguments),
        });
        break;
      }
      case 'function_call_output': {
        const toolName = item.name ?? toolNames.get(item.callId);
        if (toolName === undefined) {
          throw new ProviderError({
            vendor,
            kind: 'bad_request',
            message: `The function output for call ${item.callId} answers no function call in the input.`,
          });
        }
        const previous = last();
        const toolMessage: ToolModelMessage =
          previous?.role === 'tool' ? previous : pushed({ role: 'tool', content: [] });
        toolMessage.content.push({
          type: 'tool-result',
          toolCallId: item.callId,
          toolName,
          output: { type: 'text', value: item.output },
        });
        break;
      }
    }
  }
  return messages;

  function assistantMessage(): AssistantModelMessage & { content: Exclude<AssistantModelMessage['content'], string> } {
    const previous = last();
    if (previous?.role === 'assistant' && Array.isArray(previous.content)) {
      return previous as AssistantModelMessage & { content: Exclude<AssistantModelMessage['content'], string> };
    }
    return pushed({ role: 'assistant', content: [] });
  }

  function pushed<T extends ModelMessage>(message: T): T {
    messages.push(message);
    return message;
  }
}

/** Vendors want the arguments as an object; text that is not JSON is passed on as the vendor wrote it. */
function parseArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
