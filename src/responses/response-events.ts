import type { EventStream, StreamEvent } from '../events/stream-event';

/** `response.created` is 0 and `response.in_progress` 1: output starts at 2. */
export const FIRST_OUTPUT_SEQUENCE = 2;
export const createdEvent = (id: string): StreamEvent => ({
  type: 'response.created',
  sequence_number: 0,
  response: { id, status: 'queued' },
});
export const inProgressEvent = (id: string): StreamEvent => ({
  type: 'response.in_progress',
  sequence_number: 1,
  response: { id, status: 'in_progress' },
});

/** The events that end a Response's stream: one per final status, carrying the final Response. */
export const RESPONSE_FINAL_EVENT_TYPES: ReadonlySet<string> = new Set([
  'response.completed',
  'response.incomplete',
  'response.failed',
  'response.cancelled',
]);

const isFinal = (event: { type: string }) => RESPONSE_FINAL_EVENT_TYPES.has(event.type);

/** The event stream of a Response (its stream id is the Response id). */
export const responseStream = (id: string): EventStream => ({ id, isFinal });
