import type { Db } from '../db/database';
import { createGroupCommit } from '../db/group-commit';
import type { EventBus } from './event-bus';
import { isTerminalEvent, type StreamEvent } from './stream-event';

export const EVENTS_TOPIC = 'response-events';

/**
 * The stored stream of each Response: batches of events in `response_events`, plus a bus notification
 * after each write. Readers replay what is stored after a sequence number, then follow live.
 */
export interface EventLog {
  /** Stores one batch (one row). Inside a caller's transaction, call `notify` after commit. */
  write(responseId: string, events: StreamEvent[], executor?: Db): Promise<void>;
  notify(responseId: string, events: StreamEvent[]): Promise<void>;
  /** write + notify. */
  append(responseId: string, events: StreamEvent[]): Promise<void>;
  read(responseId: string, afterSequence: number): Promise<StreamEvent[]>;
  /** Stored events after `afterSequence`, then live ones, ending after the terminal event or on abort. */
  follow(responseId: string, afterSequence: number, signal?: AbortSignal): AsyncIterable<StreamEvent>;
}

export function createEventLog(deps: { db: Db; bus: EventBus; pollIntervalMs?: number }): EventLog {
  const { db, bus } = deps;
  const pollIntervalMs = deps.pollIntervalMs ?? 1000;

  type Batch = { responseId: string; events: StreamEvent[] };
  const rowOf = ({ responseId, events }: Batch) => ({
    response_id: responseId,
    first_seq: events[0].sequence_number,
    last_seq: events[events.length - 1].sequence_number,
    events: JSON.stringify(events),
  });
  // Batches of concurrent streams outside a transaction share one insert and one commit (db/group-commit.ts).
  const groupedWrite = createGroupCommit<Batch, void>({
    maxBatch: 200,
    write: async (batches) => {
      await db.insertInto('response_events').values(batches.map(rowOf)).execute();
      return batches.map(() => undefined);
    },
  });

  async function write(responseId: string, events: StreamEvent[], executor: Db = db) {
    if (events.length === 0) return;
    if (executor === db) return groupedWrite({ responseId, events });
    await executor.insertInto('response_events').values(rowOf({ responseId, events })).execute();
  }

  async function notify(responseId: string, events: StreamEvent[]) {
    if (events.length === 0) return;
    await bus.publish({ topic: EVENTS_TOPIC, id: responseId, value: events[events.length - 1].sequence_number, data: events, final: events.some(isTerminalEvent) });
  }

  async function read(responseId: string, afterSequence: number): Promise<StreamEvent[]> {
    const rows = await db
      .selectFrom('response_events')
      .select('events')
      .where('response_id', '=', responseId)
      .where('last_seq', '>', afterSequence)
      .orderBy('first_seq')
      .execute();
    return rows.flatMap((row) => row.events as StreamEvent[]).filter((event) => event.sequence_number > afterSequence);
  }

  async function* follow(responseId: string, afterSequence: number, signal?: AbortSignal): AsyncIterable<StreamEvent> {
    let last = afterSequence;
    const pending: StreamEvent[][] = [];
    let wake: (() => void) | undefined;
    let notified = false;
    // A reader that asked to start after the terminal event's sequence number would otherwise wait forever.
    let endedBefore = false;
    const unsubscribe = bus.subscribe(EVENTS_TOPIC, responseId, (message) => {
      if (Array.isArray(message.data)) pending.push(message.data as StreamEvent[]);
      if (message.final && message.value !== undefined && message.value <= last) endedBefore = true;
      notified = true;
      wake?.();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener('abort', onAbort);
    try {
      let needRead = true;
      while (!signal?.aborted) {
        let batch: StreamEvent[] = [];
        // Use delivered events when they continue exactly where we are; otherwise read the table.
        while (pending.length > 0) {
          const events = pending.shift()!.filter((event) => event.sequence_number > last);
          if (events.length === 0) continue;
          if (events[0].sequence_number !== last + 1) {
            needRead = true;
            break;
          }
          batch.push(...events);
          last = events[events.length - 1].sequence_number;
        }
        if (needRead) {
          needRead = false;
          pending.length = 0;
          const stored = await read(responseId, last);
          batch = batch.concat(stored);
          if (stored.length > 0) last = stored[stored.length - 1].sequence_number;
        }
        for (const event of batch) {
          yield event;
          if (isTerminalEvent(event)) return;
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
        if (notified && pending.length === 0) needRead = true;
        notified = false;
      }
    } finally {
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    write,
    notify,
    append: async (responseId, events) => {
      await write(responseId, events);
      await notify(responseId, events);
    },
    read,
    follow,
  };
}
