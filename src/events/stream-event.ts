/** One SSE event of a stream: `type` repeats the event name, `sequence_number` orders it from 0. */
export interface StreamEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

export type UnsequencedEvent = Omit<StreamEvent, 'sequence_number'>;

/**
 * A stored, resumable event stream: the events of one resource that streams (a Response today; a Run or a
 * transcription's status later). The resource's kind says which event ends it, so the log, the bus and the SSE
 * writer need not know any kind.
 */
export interface EventStream {
  /** The stream id: the id of the resource whose events these are (`resp_…`). */
  readonly id: string;
  /** True for the event that ends the stream (nothing is written after it). */
  isFinal(event: { type: string }): boolean;
}
