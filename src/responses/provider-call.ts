import type { CatalogModel } from '../catalog/catalog-types';
import type { GenerateTextRequest, GenerateTextResult, TextStreamPart } from '../providers/provider';
import type { Prompt } from './prompt';
import type { ResponseRequest } from './response-types';

/** The vendor call of a Response: its prompt, its function tools and its sampling settings, for the provider port. */
export function toGenerateTextRequest(request: ResponseRequest, model: CatalogModel, prompt: Prompt, signal: AbortSignal): GenerateTextRequest {
  const functionTools = request.tools.filter((tool) => tool.type === 'function');
  return {
    model: model.upstreamId,
    instructions: prompt.instructions,
    items: prompt.items,
    tools: functionTools.length > 0 ? functionTools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters ?? { type: 'object', properties: {} } })) : undefined,
    toolChoice: toToolChoice(request.tool_choice),
    parallelToolCalls: request.parallel_tool_calls,
    temperature: request.temperature ?? undefined,
    topP: request.top_p ?? undefined,
    maxOutputTokens: request.max_output_tokens ?? undefined,
    reasoningEffort: request.reasoning_effort ?? undefined,
    verbosity: request.verbosity ?? undefined,
    signal,
  };
}

function toToolChoice(choice: unknown) {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (choice && typeof choice === 'object' && (choice as { type?: string }).type === 'function') {
    return { type: 'function' as const, name: String((choice as { name?: string }).name) };
  }
  return undefined;
}

/** A whole generation as the parts a stream of it would have had: its text, its tool calls, its finish. */
export function* partsOf(result: GenerateTextResult): Iterable<TextStreamPart> {
  if (result.text) yield { type: 'text-delta', text: result.text };
  for (const call of result.toolCalls) yield { type: 'tool-call', callId: call.callId, name: call.name, arguments: call.arguments };
  yield { type: 'finish', finishReason: result.finishReason, usage: result.usage };
}
