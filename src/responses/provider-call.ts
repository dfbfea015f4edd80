import type { CatalogModel } from '../catalog/catalog-types';
import type { McpFunction } from '../mcp/mcp-tools';
import type {
  FunctionTool,
  GenerateTextRequest,
  GenerateTextResult,
  ResponseFormat,
  TextStreamPart,
  ToolChoice,
} from '../providers/provider';
import type { Prompt } from './prompt';
import { DEFAULT_TEMPERATURE, type ResponseRequest } from './response-types';

/** The MCP side of a model turn: the MCP tools offered as functions, and whether this is the loop's first turn. */
export interface McpTurn {
  functions: McpFunction[];
  firstTurn: boolean;
}

/** The vendor call of a Response: its prompt, its function tools (and MCP tools) and its sampling settings, for the provider port. */
export function toGenerateTextRequest(
  request: ResponseRequest,
  model: CatalogModel,
  prompt: Prompt,
  signal: AbortSignal,
  mcp?: McpTurn,
): GenerateTextRequest {
  const tools: FunctionTool[] = [
    ...request.tools.flatMap((tool) =>
      tool.type === 'function'
        ? [
            {
              name: tool.name,
              description: tool.description,
              parameters: tool.parameters ?? { type: 'object', properties: {} },
            },
          ]
        : [],
    ),
    ...(mcp?.functions ?? []).map((fn) => ({
      name: fn.name,
      description: fn.description ?? undefined,
      parameters: fn.inputSchema,
    })),
  ];
  return {
    model: model.upstreamId,
    instructions: prompt.instructions,
    items: prompt.items,
    tools: tools.length > 0 ? tools : undefined,
    toolChoice: toToolChoice(request.tool_choice, mcp),
    parallelToolCalls: request.parallel_tool_calls,
    // The spec's default when left open (not each vendor's own: Mistral's and Ollama's are lower), as the
    // Response shows it (api-decisions 16); the AI SDK leaves it out for OpenAI's reasoning models, which take
    // none. Not with a top_p alone: Claude refuses a request that sets both (its own default is 1 anyway).
    temperature: request.temperature ?? (request.top_p === null ? DEFAULT_TEMPERATURE : undefined),
    topP: request.top_p ?? undefined,
    maxOutputTokens: request.max_output_tokens ?? undefined,
    reasoningEffort: request.reasoning_effort ?? undefined,
    verbosity: request.verbosity ?? undefined,
    responseFormat: toResponseFormat(request.text_format),
    signal,
  };
}

/** `text.format` as the port's structured output request. */
export function toResponseFormat(format: ResponseRequest['text_format']): ResponseFormat | undefined {
  if (!format) return undefined;
  if (format.type === 'json_object') return { type: 'json' };
  return {
    type: 'json',
    schema: format.schema,
    name: format.name,
    description: format.description,
    strict: format.strict ?? undefined,
  };
}

/** The names of the request's client-side functions. */
export function clientFunctionNames(request: ResponseRequest): string[] {
  return request.tools.flatMap((tool) => (tool.type === 'function' ? [tool.name] : []));
}

/**
 * The request's tool_choice for one turn. In an MCP loop a forced choice applies to the first turn only (the
 * turns after it must be free to answer, or the loop would never end); `{type: mcp, server_label, name?}`
 * forces that tool, or any tool when no name is given.
 */
function toToolChoice(choice: unknown, mcp: McpTurn | undefined): ToolChoice | undefined {
  if (choice === 'none') return 'none';
  if (mcp && !mcp.firstTurn) return choice === undefined ? undefined : 'auto';
  if (choice === 'auto' || choice === 'required') return choice;
  if (choice && typeof choice === 'object') {
    const { type, name, server_label: label } = choice as { type?: string; name?: string; server_label?: string };
    if (type === 'function') return { type: 'function', name: String(name) };
    if (type === 'mcp') {
      const target = mcp?.functions.find((fn) => fn.serverLabel === label && fn.toolName === name);
      return target ? { type: 'function', name: target.name } : 'required';
    }
  }
  return undefined;
}

/** A whole generation as the parts a stream of it would have had: its text, its tool calls, its finish. */
export function* partsOf(result: GenerateTextResult): Iterable<TextStreamPart> {
  if (result.text) yield { type: 'text-delta', text: result.text };
  for (const call of result.toolCalls)
    yield { type: 'tool-call', callId: call.callId, name: call.name, arguments: call.arguments };
  yield { type: 'finish', finishReason: result.finishReason, usage: result.usage };
}
