import type { ConversationItemRow, ConversationRow } from './conversations.table';
import { outputTextToWire } from '../responses/responses.wire';
import { toUnixSeconds } from '../time';

/** What the API shows of conversations and their items. */

export function conversationToWire(row: ConversationRow) {
  return {
    id: row.id,
    object: 'conversation' as const,
    created_at: toUnixSeconds(row.created_at),
    metadata: row.metadata ?? {},
  };
}

/** The item as the API returns it: content parts for messages, call fields for tool items, `response_id` when set. */
export function itemToWire(row: ConversationItemRow) {
  const base = { id: row.id, object: 'conversation.item' as const, type: row.type };
  const tail = {
    created_at: toUnixSeconds(row.created_at),
    metadata: row.metadata ?? {},
    ...(row.response_id ? { response_id: row.response_id } : {}),
  };
  switch (row.type) {
    case 'message':
      // Output text as OpenAI's reference has it (with its annotations and logprobs arrays).
      return {
        ...base,
        role: row.role,
        status: row.status,
        content: (row.content ?? []).map((part) =>
          part.type === 'output_text'
            ? outputTextToWire({ type: 'output_text' as const, text: part.text })
            : { type: 'input_text' as const, text: part.text },
        ),
        ...tail,
      };
    case 'function_call':
      return { ...base, status: row.status, call_id: row.call_id, name: row.name, arguments: row.arguments, ...tail };
    case 'function_call_output':
      return { ...base, status: row.status, call_id: row.call_id, output: row.output, ...tail };
    case 'mcp_list_tools':
      return { ...base, server_label: row.server_label, tools: row.tools ?? [], error: row.error, ...tail };
    case 'mcp_call':
      return {
        ...base,
        status: row.status,
        server_label: row.server_label,
        name: row.name,
        arguments: row.arguments,
        output: row.output,
        error: row.error,
        ...tail,
      };
  }
}

export type ConversationItemWire = ReturnType<typeof itemToWire>;
