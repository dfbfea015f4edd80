import { EventWriter } from '../../src/events/event-writer';
import type { EventLog } from '../../src/events/event-log';
import type { EventStream, StreamEvent } from '../../src/events/stream-event';
import { responseStream } from '../../src/responses/response-events';

/**
 * An event log that keeps appended batches in memory and records live deliveries (`delivered`, and
 * `storedWhenDelivered`: how many batches were stored when each was delivered); `failNext` makes the
 * appends from then on reject.
 */
function memoryLog() {
  const batches: StreamEvent[][] = [];
  const delivered: StreamEvent[][] = [];
  const storedWhenDelivered: number[] = [];
  let fail: Error | undefined;
  const log = {
    deliver: (_stream: EventStream, events: StreamEvent[]) => {
      delivered.push(events);
      storedWhenDelivered.push(batches.length);
    },
    append: async (_stream: EventStream, events: StreamEvent[]) => {
      if (fail) throw fail;
      batches.push(events);
    },
  } as Pick<EventLog, 'append' | 'deliver'> as EventLog;
  return { log, batches, delivered, storedWhenDelivered, failNext: (error: Error) => (fail = error) };
}

const delta = (text: string) => ({ type: 'response.output_text.delta', item_id: 'msg_1', delta: text });
const added = { type: 'response.output_item.added', item: { id: 'msg_1' } };
const textDone = { type: 'response.output_text.done', item_id: 'msg_1', text: 'ab' };
const itemDone = { type: 'response.output_item.done', item: { id: 'msg_1' } };

describe('EventWriter', () => {
  // An interval far longer than the test: only the first delta and explicit calls write.
  const interval = 60_000;

  it('writes the first delta at once with what precedes it, coalesces the rest and hands back the unwritten tail', async () => {
    const { log, batches } = memoryLog();
    const writer = new EventWriter(log, responseStream('resp_1'), 2, { intervalMs: interval });
    writer.emit(added);
    writer.emit(delta('a'));
    writer.emit(delta('b'));
    writer.emit(delta('c'));
    writer.emit(textDone);
    writer.emit(itemDone);
    expect(writer.nextSequence).toBe(2 + 5);

    const unwritten = await writer.takeUnwritten(128 * 1024);
    expect(batches).toEqual([
      [
        { ...added, sequence_number: 2 },
        { ...delta('a'), sequence_number: 3 },
      ],
    ]);
    expect(unwritten).toEqual([
      { ...delta('bc'), sequence_number: 4 },
      { ...textDone, sequence_number: 5 },
      { ...itemDone, sequence_number: 6 },
    ]);
    expect(writer.nextSequence).toBe(7);
  });

  it('writes the tail itself and returns nothing when it is larger than the limit', async () => {
    const { log, batches } = memoryLog();
    const writer = new EventWriter(log, responseStream('resp_1'), 0, { intervalMs: interval });
    writer.emit(delta('x'));
    writer.emit(delta('y'.repeat(1000)));
    writer.emit(itemDone);
    expect(await writer.takeUnwritten(500)).toEqual([]);
    expect(batches.flat().map((event) => event.sequence_number)).toEqual([0, 1, 2]);
    expect(batches.flat().map((event) => event.type)).toEqual([
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_item.done',
    ]);
  });

  it('returns nothing when everything is already written', async () => {
    const { log, batches } = memoryLog();
    const writer = new EventWriter(log, responseStream('resp_1'), 0, { intervalMs: interval });
    writer.emit(delta('a'));
    expect(await writer.takeUnwritten(1024)).toEqual([]);
    expect(batches).toHaveLength(1);
  });

  it('hands each batch to live readers before it is stored', async () => {
    const { log, batches, delivered, storedWhenDelivered } = memoryLog();
    const writer = new EventWriter(log, responseStream('resp_1'), 2, { intervalMs: interval });
    writer.emit(added);
    writer.emit(delta('a'));
    // Delivered synchronously, at the flush, while its write has not even started.
    expect(delivered).toEqual([
      [
        { ...added, sequence_number: 2 },
        { ...delta('a'), sequence_number: 3 },
      ],
    ]);
    expect(batches).toEqual([]);
    writer.emit(delta('b'));
    await writer.flush();
    expect(delivered.flat().map((event) => event.sequence_number)).toEqual([2, 3, 4]);
    expect(storedWhenDelivered).toEqual([0, 0]); // the second flush did not wait for the first write either
    expect(batches).toEqual(delivered);
  });

  it('after a failed write delivers and stores nothing more, and hands back every unstored event in sequence', async () => {
    const { log, batches, delivered, failNext } = memoryLog();
    const writer = new EventWriter(log, responseStream('resp_1'), 2, { intervalMs: interval });
    writer.emit(added);
    writer.emit(delta('a'));
    await writer.flush();
    failNext(new Error('connection reset'));
    writer.emit({ ...delta('b'), item_id: 'msg_2' }); // the first delta of another item: delivered, its write fails
    await expect(writer.flush()).rejects.toThrow('connection reset');
    expect(writer.failed).toBe(true);
    expect(() => writer.emit(delta('c'))).toThrow('connection reset');
    expect(delivered.flat().map((event) => event.sequence_number)).toEqual([2, 3, 4]);
    expect(batches.flat().map((event) => event.sequence_number)).toEqual([2, 3]);

    const unstored = await writer.takeUnstored();
    expect(unstored).toEqual([{ ...delta('b'), item_id: 'msg_2', sequence_number: 4 }]);
    expect(writer.nextSequence).toBe(5);
  });

  it('keeps the tail it was asked for when the write before it failed', async () => {
    const { log, delivered, failNext } = memoryLog();
    const writer = new EventWriter(log, responseStream('resp_1'), 0, { intervalMs: interval });
    failNext(new Error('disk full'));
    writer.emit(delta('a')); // delivered at once, then its write fails
    writer.emit(itemDone); // buffered: the tail
    await expect(writer.takeUnwritten(1024)).rejects.toThrow('disk full');
    expect(delivered.flat().map((event) => event.sequence_number)).toEqual([0]);
    expect((await writer.takeUnstored()).map((event) => [event.type, event.sequence_number])).toEqual([
      ['response.output_text.delta', 0],
      ['response.output_item.done', 1],
    ]);
  });

  it('keeps unstored batches in sequence order when a flush lands between a failure and the next queued batch', async () => {
    let rejectFirst!: (error: Error) => void;
    const first = new Promise<void>((_, reject) => (rejectFirst = reject));
    let calls = 0;
    const log = {
      deliver: () => undefined,
      append: () => (calls++ === 0 ? first : Promise.resolve()),
    } as unknown as EventLog;
    const writer = new EventWriter(log, responseStream('resp_1'), 0, { intervalMs: interval });
    writer.emit(delta('x')); // sequence 0: its write in flight
    writer.emit({ ...delta('y'), item_id: 'msg_2' }); // 1: a first delta too, queued behind it
    writer.emit(itemDone); // 2: buffered
    while (calls === 0) await Promise.resolve();
    first.catch(() => writer.flush().catch(() => undefined)); // flushes 2 in the microtask right after the failure
    rejectFirst(new Error('reset'));
    expect((await writer.takeUnstored()).map((event) => event.sequence_number)).toEqual([0, 1, 2]);
    expect(writer.nextSequence).toBe(3);
  });

  it('has nothing unstored when every write succeeded', async () => {
    const { log } = memoryLog();
    const writer = new EventWriter(log, responseStream('resp_1'), 0, { intervalMs: interval });
    writer.emit(delta('a'));
    writer.emit(itemDone);
    expect(writer.failed).toBe(false);
    expect(await writer.takeUnstored()).toEqual([]);
    expect(writer.nextSequence).toBe(2);
  });

  it('rejects the tail after a failed write, so nothing is stored past a gap', async () => {
    const { log, batches, failNext } = memoryLog();
    const writer = new EventWriter(log, responseStream('resp_1'), 0, { intervalMs: interval });
    failNext(new Error('disk full'));
    writer.emit(delta('a'));
    writer.emit(itemDone);
    await expect(writer.takeUnwritten(1024)).rejects.toThrow('disk full');
    expect(batches).toEqual([]);
  });
});
