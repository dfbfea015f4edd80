import type { JSONSchema7, LanguageModelV3FunctionTool, LanguageModelV3ToolChoice } from '@ai-sdk/provider';
import type { FunctionTool, ToolChoice } from '../provider';

/**
 * Port tools → the provider-level function tools. The JSON Schema goes to the vendor as given (no
 * validation here, the vendor is the judge) and nothing executes them: tool calls come back to us.
 */
export function toFunctionTools(tools: readonly FunctionTool[] | undefined): LanguageModelV3FunctionTool[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: tool.parameters as JSONSchema7,
  }));
}

/** Without tools there is nothing to choose: the choice is dropped, as the AI SDK itself does. */
export function toToolChoice(choice: ToolChoice | undefined, hasTools: boolean): LanguageModelV3ToolChoice | undefined {
  if (choice === undefined || !hasTools) return undefined;
  if (typeof choice === 'string') return { type: choice };
  return { type: 'tool', toolName: choice.name };
}
