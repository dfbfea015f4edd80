import { toUnixSeconds } from '../time';
import type { AssistantRow } from './assistants.table';

/** api-decisions 4: the full record; unset scalar fields are null, `tools` is [] and `metadata` {}. */
export function assistantToWire(row: AssistantRow) {
  return {
    id: row.id,
    object: 'assistant' as const,
    created_at: toUnixSeconds(row.created_at),
    name: row.name,
    description: row.description,
    model: row.model,
    vendor: row.vendor,
    instructions: row.instructions,
    reasoning_effort: row.reasoning_effort,
    temperature: row.temperature,
    tools: row.tools ?? [],
    tool_resources: row.tool_resources ?? null,
    metadata: row.metadata ?? {},
  };
}

/** The list entry (spec: `{id, name, model, vendor}`). */
export function assistantToListEntry(row: AssistantRow) {
  return { id: row.id, name: row.name, model: row.model, vendor: row.vendor };
}
