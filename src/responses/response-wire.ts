import type { InputItem } from './response-types';
import type { ResponseRow } from './responses.table';
import { toUnixSeconds } from '../time';


/** The Response object of the spec. Output is empty while queued and after cancellation. */
export function responseToWire(row: ResponseRow) {
  return {
    id: row.id,
    object: 'response' as const,
    created_at: toUnixSeconds(row.created_at),
    status: row.status,
    background: row.background,
    model: row.model,
    output: row.output,
    ...(row.conversation_id ? { conversation: { id: row.conversation_id } } : {}),
    ...(row.previous_response_id ? { previous_response_id: row.previous_response_id } : {}),
    ...(row.assistant_id !== null ? { assistant_id: row.assistant_id } : {}),
    instructions: row.request.instructions,
    temperature: row.request.temperature,
    top_p: row.request.top_p,
    max_output_tokens: row.request.max_output_tokens,
    parallel_tool_calls: row.request.parallel_tool_calls,
    tool_choice: row.request.tool_choice ?? 'auto',
    tools: row.request.tools.map((tool) => (tool.type === 'mcp' ? { ...tool, authorization: undefined, headers: undefined } : tool)),
    truncation: row.request.truncation,
    ...(row.request.text_format ? { text: { format: row.request.text_format } } : {}),
    metadata: row.metadata,
    usage: row.usage,
    error: row.error,
    incomplete_details: row.incomplete_details,
    completed_at: row.completed_at ? toUnixSeconds(row.completed_at) : null,
  };
}

/** An input item as OpenAI's input items list shows it: a message's text as one part. */
export function inputItemToWire({ id, item }: { id: string; item: InputItem }) {
  switch (item.type) {
    case 'message':
      return { id, type: 'message' as const, role: item.role, status: 'completed' as const, content: [{ type: item.role === 'assistant' ? 'output_text' : 'input_text', text: item.content }] };
    case 'function_call':
      return { id, type: 'function_call' as const, status: 'completed' as const, call_id: item.call_id, name: item.name, arguments: item.arguments };
    case 'function_call_output':
      return { id, type: 'function_call_output' as const, status: 'completed' as const, call_id: item.call_id, output: item.output };
  }
}

export type ResponseWire = ReturnType<typeof responseToWire>;
