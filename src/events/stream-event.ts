/** One SSE event of a Response stream: `type` repeats the event name, `sequence_number` orders it from 0. */
export interface StreamEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

export type UnsequencedEvent = Omit<StreamEvent, 'sequence_number'>;

export const TERMINAL_EVENT_TYPES = new Set(['response.completed', 'response.incomplete', 'response.failed', 'response.cancelled']);

export const isTerminalEvent = (event: { type: string }) => TERMINAL_EVENT_TYPES.has(event.type);
