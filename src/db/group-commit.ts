/**
 * Group commit in the application: writes submitted while batches are being written wait and then go
 * together as the next batch, in one statement and one commit. With a batch slot free a write starts at
 * once (on the next microtask, so writes submitted in the same tick share it), so an idle service adds
 * no delay; a busy one makes fewer, larger commits instead of queueing on row locks and fsyncs.
 *
 * `maxInFlight` batches may be written at once (default 1: each batch after the previous one, for writers
 * whose batches must commit in order, like a stream's events). A writer whose rows are each decided under a
 * lock of their own (holds and debits: their account's row) names that lock with `keyOf`, and a batch starts
 * beside the ones in flight with the waiting items whose keys none of them holds: a write for an idle account
 * does not wait a whole batch write of another account's before its own starts, while the writes of one busy
 * account still go together, one batch at a time (parallel batches of one account would only queue on its row
 * lock, each through its own commit). With nothing in flight a batch takes every key.
 *
 * `write` gets a batch and answers one result per item, in order. When a batch of several fails, each
 * item is retried alone, so one bad item (an account deleted meanwhile, say) fails only its own caller.
 */
export interface GroupCommitOptions<I, O> {
  write: (items: I[]) => Promise<O[]>;
  /** Largest batch (bounded by the statement's parameter count). */
  maxBatch: number;
  /** Batches written at once (each takes a database connection); 1 unless batches may commit in any order. */
  maxInFlight?: number;
  /** With maxInFlight > 1: the lock an item is decided under; items of a key in flight wait for that batch. */
  keyOf?: (item: I) => string;
  /** Told each batch's size as it is written (metrics). */
  onBatch?: (size: number) => void;
}

export type GroupCommit<I, O> = (item: I) => Promise<O>;

interface Waiting<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (reason: unknown) => void;
}

export function createGroupCommit<I, O>(options: GroupCommitOptions<I, O>): GroupCommit<I, O> {
  const maxInFlight = options.maxInFlight ?? 1;
  const { keyOf } = options;
  let queue: Waiting<I, O>[] = [];
  let inFlight = 0;
  /** Keys held by the batches in flight, with how many of them hold each. */
  const busy = new Map<string, number>();
  let scheduled = false;

  function schedule() {
    if (inFlight >= maxInFlight || scheduled || queue.length === 0) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      void flush();
    });
  }

  /** The next batch: the first maxBatch waiting, or beside batches in flight, those whose keys none holds. */
  function takeBatch(): Waiting<I, O>[] {
    if (inFlight === 0 || !keyOf) {
      const batch = queue.slice(0, options.maxBatch);
      queue = queue.slice(batch.length);
      return batch;
    }
    const batch: Waiting<I, O>[] = [];
    const rest: Waiting<I, O>[] = [];
    for (const waiting of queue) {
      if (batch.length < options.maxBatch && !busy.has(keyOf(waiting.item))) batch.push(waiting);
      else rest.push(waiting);
    }
    queue = rest;
    return batch;
  }

  async function flush() {
    if (inFlight >= maxInFlight || queue.length === 0) return;
    const batch = takeBatch();
    if (batch.length === 0) return; // every waiting key is in flight: the batch holding it schedules them
    inFlight++;
    const keys = new Set(keyOf ? batch.map((waiting) => keyOf(waiting.item)) : []);
    for (const key of keys) busy.set(key, (busy.get(key) ?? 0) + 1);
    options.onBatch?.(batch.length);
    // More waiting than this batch takes, and a slot free: the next batch starts beside it.
    schedule();
    try {
      await writeBatch(batch);
    } finally {
      inFlight--;
      for (const key of keys) {
        const holders = busy.get(key)! - 1;
        if (holders === 0) busy.delete(key);
        else busy.set(key, holders);
      }
      schedule();
    }
  }

  async function writeBatch(batch: Waiting<I, O>[]) {
    try {
      const results = await options.write(batch.map((waiting) => waiting.item));
      if (results.length !== batch.length)
        throw new Error(`group commit: ${results.length} results for ${batch.length} items`);
      batch.forEach((waiting, index) => waiting.resolve(results[index]!));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      for (const waiting of batch) await writeBatch([waiting]);
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      schedule();
    });
}
