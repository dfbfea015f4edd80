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
    metadata: row.metadata,
    usage: row.usage,
    error: row.error,
    incomplete_details: row.incomplete_details,
    completed_at: row.completed_at ? toUnixSeconds(row.completed_at) : null,
  };
}

export type ResponseWire = ReturnType<typeof responseToWire>;
