import { createGroupCommit } from '../../src/db/group-commit';

/** A writer the test releases by hand, so batch boundaries are decided by events, not by timing. */
function controlledWriter() {
  const batches: number[][] = [];
  const pending: Array<() => void> = [];
  const write = (items: number[]) => {
    batches.push(items);
    return new Promise<number[]>((resolve, reject) => {
      pending.push(() => (items.includes(13) ? reject(new Error('unlucky')) : resolve(items.map((item) => item * 10))));
    });
  };
  const releaseNext = async () => {
    while (pending.length === 0) await new Promise((resolve) => setImmediate(resolve));
    pending.shift()!();
  };
  return { batches, write, releaseNext };
}

describe('group commit', () => {
  it('writes at once when idle and batches what arrives while a write is in flight', async () => {
    const writer = controlledWriter();
    const submit = createGroupCommit({ write: writer.write, maxBatch: 3 });
    const first = submit(1);
    await new Promise((resolve) => setImmediate(resolve)); // the first write has started
    const later = [submit(2), submit(3), submit(4), submit(5)];
    await writer.releaseNext();
    expect(await first).toBe(10);
    await writer.releaseNext();
    await writer.releaseNext();
    expect(await Promise.all(later)).toEqual([20, 30, 40, 50]);
    // 1 went alone (nothing was in flight); 2-5 waited for it and were split by maxBatch.
    expect(writer.batches).toEqual([[1], [2, 3, 4], [5]]);
  });

  it('groups items submitted in the same tick', async () => {
    const writer = controlledWriter();
    const submit = createGroupCommit({ write: writer.write, maxBatch: 10 });
    const results = [submit(1), submit(2), submit(3)];
    await writer.releaseNext();
    expect(await Promise.all(results)).toEqual([10, 20, 30]);
    expect(writer.batches).toEqual([[1, 2, 3]]);
  });

  it('retries a failed batch item by item so only the bad item fails', async () => {
    const writer = controlledWriter();
    const submit = createGroupCommit({ write: writer.write, maxBatch: 10 });
    const outcomes = [submit(12), submit(13), submit(14)].map((promise) =>
      promise.then(String, (error: Error) => error.message),
    );
    for (let released = 0; released < 4; released++) await writer.releaseNext();
    expect(await Promise.all(outcomes)).toEqual(['120', 'unlucky', '140']);
    expect(writer.batches).toEqual([[12, 13, 14], [12], [13], [14]]);
  });

  it('starts a second batch beside one in flight when two may be written at once, and queues behind both', async () => {
    const writer = controlledWriter();
    const submit = createGroupCommit({ write: writer.write, maxBatch: 10, maxInFlight: 2 });
    const first = submit(1);
    await new Promise((resolve) => setImmediate(resolve)); // the first write has started
    const second = submit(2);
    await new Promise((resolve) => setImmediate(resolve)); // a slot was free: the second started beside it
    expect(writer.batches).toEqual([[1], [2]]);
    const waiting = [submit(3), submit(4)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(writer.batches).toEqual([[1], [2]]); // both slots busy: 3 and 4 wait
    await writer.releaseNext();
    expect(await first).toBe(10);
    await writer.releaseNext();
    await writer.releaseNext();
    expect(await Promise.all([second, ...waiting])).toEqual([20, 30, 40]);
    // 3 and 4 went together into the first slot freed.
    expect(writer.batches).toEqual([[1], [2], [3, 4]]);
  });

  it('with keys, a batch beside those in flight takes only the keys none of them holds; a key in flight waits for its batch', async () => {
    const writer = controlledWriter();
    // Keyed by tens: 11 and 12 share a key (one account), 21 and 31 have their own.
    const submit = createGroupCommit({
      write: writer.write,
      maxBatch: 10,
      maxInFlight: 3,
      keyOf: (item: number) => String(Math.floor(item / 10)),
    });
    const first = submit(11);
    await new Promise((resolve) => setImmediate(resolve)); // 11's batch is in flight, holding key 1
    const rest = [submit(12), submit(21), submit(31)];
    await new Promise((resolve) => setImmediate(resolve));
    // 21 and 31 started beside it at once; 12 waits for the batch of its key, rather than queueing on its lock.
    expect(writer.batches).toEqual([[11], [21, 31]]);
    await writer.releaseNext();
    expect(await first).toBe(110);
    await writer.releaseNext();
    await writer.releaseNext();
    expect(await Promise.all(rest)).toEqual([120, 210, 310]);
    expect(writer.batches).toEqual([[11], [21, 31], [12]]);
  });
});
