import { toUnixSeconds } from '../time';
import type { RunRow } from './runs.table';

const seconds = (date: Date | null) => (date ? toUnixSeconds(date) : null);

/** api-decisions 6, with the settings the Run was made with (as the Assistants API showed them). */
export function runToWire(row: RunRow) {
  return {
    id: row.id,
    object: 'thread.run' as const,
    created_at: toUnixSeconds(row.created_at),
    thread_id: row.thread_id,
    assistant_id: row.assistant_id,
    status: row.status,
    model: row.model,
    instructions: row.instructions,
    additional_instructions: row.request.additional_instructions,
    tools: row.request.tools.map((tool) => ({
      type: 'function' as const,
      function: { name: tool.name, description: tool.description ?? null, parameters: tool.parameters ?? null },
    })),
    required_action: row.required_action,
    usage: row.usage,
    last_error: row.last_error,
    started_at: seconds(row.started_at),
    expires_at: row.status === 'requires_action' ? seconds(row.expires_at) : null,
    completed_at: seconds(row.completed_at),
    cancelled_at: seconds(row.cancelled_at),
    failed_at: seconds(row.failed_at),
    temperature: row.request.temperature,
    top_p: row.request.top_p,
    max_completion_tokens: row.request.max_completion_tokens,
    parallel_tool_calls: row.request.parallel_tool_calls,
    message_limit: row.request.message_limit,
    metadata: row.metadata,
  };
}

export type RunWire = ReturnType<typeof runToWire>;
