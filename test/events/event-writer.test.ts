import { EventWriter } from '../../src/events/event-writer';
import type { EventLog } from '../../src/events/event-log';
import type { StreamEvent } from '../../src/events/stream-event';

/** An event log that keeps appended batches in memory; `fail` makes the next append reject. */
function memoryLog() {
  const batches: StreamEvent[][] = [];
  let fail: Error | undefined;
  const log = {
    append: async (_responseId: string, events: StreamEvent[]) => {
      if (fail) throw fail;
      batches.push(events);
    },
  } as Pick<EventLog, 'append'> as EventLog;
  return { log, batches, failNext: (error: Error) => (fail = error) };
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
    const writer = new EventWriter(log, 'resp_1', 2, { intervalMs: interval });
    writer.emit(added);
    writer.emit(delta('a'));
    writer.emit(delta('b'));
    writer.emit(delta('c'));
    writer.emit(textDone);
    writer.emit(itemDone);
    expect(writer.nextSequence).toBe(2 + 5);

    const unwritten = await writer.takeUnwritten(128 * 1024);
    expect(batches).toEqual([[{ ...added, sequence_number: 2 }, { ...delta('a'), sequence_number: 3 }]]);
    expect(unwritten).toEqual([
      { ...delta('bc'), sequence_number: 4 },
      { ...textDone, sequence_number: 5 },
      { ...itemDone, sequence_number: 6 },
    ]);
    expect(writer.nextSequence).toBe(7);
  });

  it('writes the tail itself and returns nothing when it is larger than the limit', async () => {
    const { log, batches } = memoryLog();
    const writer = new EventWriter(log, 'resp_1', 0, { intervalMs: interval });
    writer.emit(delta('x'));
    writer.emit(delta('y'.repeat(1000)));
    writer.emit(itemDone);
    expect(await writer.takeUnwritten(500)).toEqual([]);
    expect(batches.flat().map((event) => event.sequence_number)).toEqual([0, 1, 2]);
    expect(batches.flat().map((event) => event.type)).toEqual(['response.output_text.delta', 'response.output_text.delta', 'response.output_item.done']);
  });

  it('returns nothing when everything is already written', async () => {
    const { log, batches } = memoryLog();
    const writer = new EventWriter(log, 'resp_1', 0, { intervalMs: interval });
    writer.emit(delta('a'));
    expect(await writer.takeUnwritten(1024)).toEqual([]);
    expect(batches).toHaveLength(1);
  });

  it('rejects the tail after a failed write, so nothing is stored past a gap', async () => {
    const { log, batches, failNext } = memoryLog();
    const writer = new EventWriter(log, 'resp_1', 0, { intervalMs: interval });
    failNext(new Error('disk full'));
    writer.emit(delta('a'));
    writer.emit(itemDone);
    await expect(writer.takeUnwritten(1024)).rejects.toThrow('disk full');
    expect(batches).toEqual([]);
  });
});
