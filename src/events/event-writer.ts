import type { EventLog } from './event-log';
import type { EventStream, StreamEvent, UnsequencedEvent } from './stream-event';

/**
 * Batches a generation's events into few writes. The first delta of an item goes out at once, with what is
 * buffered before it (time to first token); everything else is coalesced (deltas per item) and flushed at
 * most every `intervalMs` or by `flush()`, so a fast stream writes a row per interval, not per token. Sequence numbers are assigned at
 * flush time, after coalescing, so they stay gap-free.
 *
 * A flushed batch reaches this process's live readers at once (`EventLog.deliver`) and is then stored: the
 * first token does not wait for a commit. So a batch that fails to store may already have been seen: from
 * then on nothing more is written or delivered, and `takeUnstored` hands every event not stored (sequenced
 * as readers saw them) to the caller, who must end the generation with them rather than generate again.
 */
export class EventWriter {
  private buffer: UnsequencedEvent[] = [];
  private next: number;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown;
  /** After a failed write: the failed batch and every later one, in order (none of them stored). */
  private readonly unstored: StreamEvent[] = [];
  // Counting from creation: events before the first delta (the item it belongs to) wait for that delta
  // and go out with it, instead of taking a write of their own.
  private lastFlushAt = Date.now();
  private readonly startedItems = new Set<string>();

  private readonly intervalMs: number;
  private readonly flushFirstDelta: boolean;

  /**
   * `flushFirstDelta: false` is for a stream nobody is reading live (a synchronous Response without `stream`):
   * its first delta waits for the interval like the rest, so a short generation writes nothing until the end.
   */
  constructor(
    private readonly log: EventLog,
    private readonly stream: EventStream,
    firstSequence: number,
    options: { intervalMs?: number; flushFirstDelta?: boolean } = {},
  ) {
    this.next = firstSequence;
    this.intervalMs = options.intervalMs ?? 50;
    this.flushFirstDelta = options.flushFirstDelta ?? true;
  }

  get nextSequence(): number {
    return this.next + this.buffer.length;
  }

  emit(event: UnsequencedEvent): void {
    if (this.failure) throw this.failure;
    const previous = this.buffer[this.buffer.length - 1];
    if (
      event.type === 'response.output_text.delta' &&
      previous?.type === 'response.output_text.delta' &&
      previous.item_id === event.item_id
    ) {
      previous.delta = String(previous.delta) + String(event.delta);
    } else {
      this.buffer.push({ ...event });
    }
    const isDelta = event.type === 'response.output_text.delta';
    const firstDelta = isDelta && this.flushFirstDelta && !this.startedItems.has(String(event.item_id));
    if (isDelta) this.startedItems.add(String(event.item_id));
    const waited = Date.now() - this.lastFlushAt;
    if (firstDelta || waited >= this.intervalMs) this.scheduleFlush(0);
    else this.scheduleFlush(this.intervalMs - waited);
  }

  private scheduleFlush(delay: number) {
    if (delay === 0) {
      this.stopTimer();
      this.flushNow();
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flushNow();
      }, delay);
    }
  }

  private stopTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The buffered events, numbered from the next sequence number; the buffer is left as it is. */
  private sequenced(): StreamEvent[] {
    return this.buffer.map((event, index) => ({ ...event, sequence_number: this.next + index }) as StreamEvent);
  }

  private flushNow() {
    if (this.buffer.length === 0) return;
    const events = this.sequenced();
    this.next += events.length;
    this.buffer = [];
    this.lastFlushAt = Date.now();
    if (!this.failure) this.log.deliver(this.stream, events);
    // After a failed write nothing more is written (a later batch would leave a gap in the stored sequence) or
    // delivered; batches are kept in sequence order, through the chain, for takeUnstored.
    this.chain = this.chain.then(async () => {
      if (this.failure) {
        this.unstored.push(...events);
        return;
      }
      try {
        await this.log.append(this.stream, events);
      } catch (error) {
        this.failure = error ?? new Error('The event log rejected a batch.');
        this.unstored.push(...events);
      }
    });
  }

  /** Whether a write failed (`emit` then throws, and `takeUnstored` has what was not stored). */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /**
   * After a failed write: waits for the batches handed to the log and returns every event not stored, the
   * buffered ones included, sequenced as live readers saw (or would have seen) them. Empty when none failed.
   */
  async takeUnstored(): Promise<StreamEvent[]> {
    this.stopTimer();
    await this.settled();
    if (!this.failure) return [];
    const buffered = this.sequenced();
    this.next += buffered.length;
    this.buffer = [];
    return [...this.unstored.splice(0), ...buffered];
  }

  /** Waits for every batch handed to the log, those handed over while waiting included. */
  private async settled(): Promise<void> {
    let chain: Promise<void>;
    do {
      chain = this.chain;
      await chain;
    } while (chain !== this.chain);
  }

  /**
   * Ends writing: waits for the batches already handed to the log and returns the events not yet written,
   * sequenced, for the caller to store in a statement of its own (the Response's finalisation). When they
   * would serialise to more than `maxChars`, they are written here instead and nothing is returned.
   * Rejects if any write failed.
   */
  async takeUnwritten(maxChars: number): Promise<StreamEvent[]> {
    this.stopTimer();
    const events = this.sequenced();
    if (events.length === 0 || JSON.stringify(events).length > maxChars) {
      await this.flush();
      return [];
    }
    this.next += events.length;
    this.buffer = [];
    this.chain = this.chain.then(() => {
      if (this.failure) this.unstored.push(...events);
    });
    await this.chain;
    if (this.failure) throw this.failure;
    return events;
  }

  /** Writes everything emitted so far; rejects if any write failed. */
  async flush(): Promise<number> {
    this.stopTimer();
    this.flushNow();
    await this.chain;
    if (this.failure) throw this.failure;
    return this.next;
  }
}
