import { jsonSchema, type JSONSchema7, type Tool, type ToolChoice as AiToolChoice, type ToolSet } from 'ai';
import type { FunctionTool, ToolChoice } from '../provider';

/**
 * Port tools → AI SDK tools. No `execute`: the SDK then returns tool calls to us instead of running them,
 * and the JSON Schema goes to the vendor as given (no validation here, the vendor is the judge).
 */
export function toToolSet(tools: readonly FunctionTool[] | undefined): ToolSet | undefined {
  if (!tools || tools.length === 0) return undefined;
  const set: ToolSet = {};
  for (const tool of tools) {
    const definition: Tool = {
      description: tool.description,
      inputSchema: jsonSchema(tool.parameters as JSONSchema7),
    };
    set[tool.name] = definition;
  }
  return set;
}

export function toToolChoice(choice: ToolChoice | undefined): AiToolChoice<ToolSet> | undefined {
  if (choice === undefined || typeof choice === 'string') return choice;
  return { type: 'tool', toolName: choice.name };
}
