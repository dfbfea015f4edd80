import { sql } from 'kysely';
import type { Db } from '../db/database';
import { createGroupCommit } from '../db/group-commit';
import type { Metrics } from '../metrics/metrics';
import type { EventBus } from './event-bus';
import type { EventStream, StreamEvent } from './stream-event';

export const EVENTS_TOPIC = 'stream-events';

/**
 * The stored event streams of resources that stream (keyed by stream id): batches of events in
 * `stream_events`, plus a bus notification after each write. Readers replay what is stored after a sequence
 * number, then follow live until the event the stream's kind calls final.
 */
export interface EventLog {
  /** Stores one batch (one row). Inside a caller's transaction, call `notify` after commit. */
  write(streamId: string, events: StreamEvent[], executor?: Db): Promise<void>;
  notify(stream: EventStream, events: StreamEvent[]): Promise<void>;
  /**
   * Hands events to this process's live readers now, before they are stored (a generation's deltas: the
   * first token reaches a client without waiting for a commit). The writer must `append` them next, and
   * must not let another attempt of the generation reuse their sequence numbers if that fails.
   */
  deliver(stream: EventStream, events: StreamEvent[]): void;
  /** write + notify. */
  append(stream: EventStream, events: StreamEvent[]): Promise<void>;
  read(streamId: string, afterSequence: number): Promise<StreamEvent[]>;
  /** Stored events after `afterSequence`, then live ones, ending after the final event or on abort. */
  follow(stream: EventStream, afterSequence: number, signal?: AbortSignal): AsyncIterable<StreamEvent>;
  /**
   * follow, subscribed now rather than when iteration starts. A caller that subscribes before anything else
   * can write the stream's events and knows what is stored (`stored`, the events after `afterSequence`)
   * saves the initial read: a new Response's creator, before its job runs.
   */
  subscribe(stream: EventStream, afterSequence: number, stored?: StreamEvent[]): Follower;
}

/** A live subscription to one stream's events; `close` releases it when `events` is never iterated. */
export interface Follower {
  events(signal?: AbortSignal): AsyncIterable<StreamEvent>;
  close(): void;
}

export function createEventLog(deps: { db: Db; bus: EventBus; pollIntervalMs?: number; metrics?: Metrics }): EventLog {
  const { db, bus } = deps;
  const pollIntervalMs = deps.pollIntervalMs ?? 1000;

  type Batch = { streamId: string; events: StreamEvent[] };
  // Batches travel as one jsonb parameter: one statement text whatever their number (a prepared statement).
  const insertBatches = async (executor: Db, batches: Batch[]) => {
    const rows = batches.map(({ streamId, events }) => ({
      stream_id: streamId,
      first_seq: events[0].sequence_number,
      last_seq: events[events.length - 1].sequence_number,
      events,
    }));
    await sql`
      insert into stream_events (stream_id, first_seq, last_seq, events)
      select stream_id, first_seq, last_seq, events
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as batch (stream_id text, first_seq integer, last_seq integer, events jsonb)`.execute(
      executor,
    );
  };
  // Batches of concurrent streams outside a transaction share one insert and one commit (db/group-commit.ts).
  const groupedWrite = createGroupCommit<Batch, void>({
    maxBatch: 200,
    onBatch: (size) => deps.metrics?.groupCommitBatch.observe({ writer: 'stream_events' }, size),
    write: async (batches) => {
      await insertBatches(db, batches);
      return batches.map(() => undefined);
    },
  });

  async function write(streamId: string, events: StreamEvent[], executor: Db = db) {
    if (events.length === 0) return;
    if (executor === db) return groupedWrite({ streamId, events });
    await insertBatches(executor, [{ streamId, events }]);
  }

  const message = (stream: EventStream, events: StreamEvent[]) => ({
    topic: EVENTS_TOPIC,
    id: stream.id,
    value: events[events.length - 1].sequence_number,
    data: events,
    final: events.some((event) => stream.isFinal(event)),
  });

  async function notify(stream: EventStream, events: StreamEvent[]) {
    if (events.length === 0) return;
    await bus.publish(message(stream, events));
  }

  function deliver(stream: EventStream, events: StreamEvent[]) {
    if (events.length > 0) bus.publishLocal(message(stream, events));
  }

  async function read(streamId: string, afterSequence: number): Promise<StreamEvent[]> {
    const rows = await db
      .selectFrom('stream_events')
      .select('events')
      .where('stream_id', '=', streamId)
      .where('last_seq', '>', afterSequence)
      .orderBy('first_seq')
      .execute();
    return rows.flatMap((row) => row.events as StreamEvent[]).filter((event) => event.sequence_number > afterSequence);
  }

  /**
   * Subscribes to a stream's events at once. `stored` are the events already stored after `afterSequence`
   * (undefined: unknown, read them from the table first). The subscription is released when the iteration of
   * `events` ends, or by `close` when it never starts.
   */
  function subscribe(stream: EventStream, afterSequence: number, stored?: StreamEvent[]): Follower {
    let last = afterSequence;
    const pending: StreamEvent[][] = stored && stored.length > 0 ? [stored] : [];
    let wake: (() => void) | undefined;
    let notified = false;
    // A notification without the events (from another process): they are read from the table. Events
    // delivered again once stored (see `deliver`) are skipped by their sequence numbers, without a read.
    let announced = false;
    // A reader that asked to start after the final event's sequence number would otherwise wait forever.
    let endedBefore = false;
    const unsubscribe = bus.subscribe(EVENTS_TOPIC, stream.id, (message) => {
      if (Array.isArray(message.data)) pending.push(message.data as StreamEvent[]);
      else announced = true;
      if (message.final && message.value !== undefined && message.value <= last) endedBefore = true;
      notified = true;
      wake?.();
    });

    async function* events(signal?: AbortSignal): AsyncIterable<StreamEvent> {
      const onAbort = () => wake?.();
      signal?.addEventListener('abort', onAbort);
      try {
        let needRead = stored === undefined;
        while (!signal?.aborted) {
          let batch: StreamEvent[] = [];
          // Use delivered events when they continue exactly where we are; otherwise read the table.
          while (pending.length > 0) {
            const delivered = pending.shift()!.filter((event) => event.sequence_number > last);
            if (delivered.length === 0) continue;
            if (delivered[0].sequence_number !== last + 1) {
              needRead = true;
              break;
            }
            batch.push(...delivered);
            last = delivered[delivered.length - 1].sequence_number;
          }
          if (needRead) {
            needRead = false;
            pending.length = 0;
            const fromTable = await read(stream.id, last);
            batch = batch.concat(fromTable);
            if (fromTable.length > 0) last = fromTable[fromTable.length - 1].sequence_number;
          }
          for (const event of batch) {
            yield event;
            if (stream.isFinal(event)) return;
          }
          if (pending.length > 0) continue;
          if (endedBefore) return;
          if (!notified) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(() => {
                needRead = true;
                resolve();
              }, pollIntervalMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = undefined;
          }
          if (announced) needRead = true;
          announced = false;
          notified = false;
        }
      } finally {
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
      }
    }

    return { events, close: unsubscribe };
  }

  async function* follow(stream: EventStream, afterSequence: number, signal?: AbortSignal): AsyncIterable<StreamEvent> {
    yield* subscribe(stream, afterSequence).events(signal);
  }

  return {
    write,
    notify,
    deliver,
    append: async (stream, events) => {
      await write(stream.id, events);
      await notify(stream, events);
    },
    read,
    follow,
    subscribe,
  };
}
