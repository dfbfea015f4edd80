import type { FunctionToolSpec } from '../responses/response-types';

/** Assistants keep tools in the nested form {type, function: {...}}; Responses and Runs use the flat one. */
export function assistantFunctionTools(tools: unknown[]): FunctionToolSpec[] {
  return tools.flatMap((tool) => {
    const nested = tool as {
      type?: string;
      function?: { name: string; description?: string; parameters?: Record<string, unknown> };
    };
    return nested.type === 'function' && nested.function
      ? [
          {
            type: 'function' as const,
            name: nested.function.name,
            description: nested.function.description,
            parameters: nested.function.parameters,
          },
        ]
      : [];
  });
}
