import { toUnixSeconds } from '../time';
import type { ThreadMessageRow, ThreadRow } from './threads.table';

/** Row → wire (api-decisions 5). */

export function threadToWire(row: ThreadRow) {
  return {
    id: row.id,
    object: 'thread' as const,
    created_at: toUnixSeconds(row.created_at),
    metadata: row.metadata ?? {},
    tool_resources: row.tool_resources ?? null,
  };
}

/** `assistant_id` and `run_id` are null unless a Run appended the message. */
export function messageToWire(row: ThreadMessageRow) {
  return {
    id: row.id,
    object: 'thread.message' as const,
    created_at: toUnixSeconds(row.created_at),
    thread_id: row.thread_id,
    role: row.role,
    status: row.status,
    content: row.content,
    metadata: row.metadata ?? {},
    assistant_id: row.assistant_id,
    run_id: row.run_id,
  };
}

export type ThreadWire = ReturnType<typeof threadToWire>;
export type ThreadMessageWire = ReturnType<typeof messageToWire>;
