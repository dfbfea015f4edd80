import type { LanguageModelV3Message, LanguageModelV3Prompt } from '@ai-sdk/provider';
import { ProviderError, type PromptItem } from '../provider';

type AssistantMessage = Extract<LanguageModelV3Message, { role: 'assistant' }>;
type ToolMessage = Extract<LanguageModelV3Message, { role: 'tool' }>;

/**
 * Instructions + PromptItem[] → the AI SDK's provider-level prompt (what every vendor adapter's doGenerate /
 * doStream takes). Consecutive assistant text and function calls become one assistant message, and
 * consecutive function outputs one tool message, because that is the shape the vendors themselves use
 * (Anthropic requires every tool_use of a turn to be answered in the next message). A function output
 * names its tool only by callId, so the name is taken from the call it answers.
 */
export function toPrompt(
  instructions: string | undefined,
  items: readonly PromptItem[],
  vendor: string,
): LanguageModelV3Prompt {
  if (items.length === 0) {
    throw new ProviderError({
      vendor,
      kind: 'bad_request',
      message: `The request for ${vendor} is invalid: the prompt has no input items.`,
    });
  }
  const toolNames = new Map<string, string>();
  for (const item of items) {
    if (item.type === 'function_call') toolNames.set(item.callId, item.name);
  }

  const messages: LanguageModelV3Prompt = [];
  if (instructions !== undefined) messages.push({ role: 'system', content: instructions });
  const last = () => messages[messages.length - 1];

  for (const item of items) {
    switch (item.type) {
      case 'message': {
        if (item.role === 'assistant') {
          assistantMessage().content.push({ type: 'text', text: item.text });
        } else if (item.role === 'system') {
          messages.push({ role: 'system', content: item.text });
        } else {
          messages.push({ role: 'user', content: [{ type: 'text', text: item.text }] });
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
        const toolMessage: ToolMessage =
          previous?.role === 'tool' ? previous : pushed<ToolMessage>({ role: 'tool', content: [] });
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

  function assistantMessage(): AssistantMessage {
    const previous = last();
    return previous?.role === 'assistant' ? previous : pushed<AssistantMessage>({ role: 'assistant', content: [] });
  }

  function pushed<T extends LanguageModelV3Message>(message: T): T {
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
