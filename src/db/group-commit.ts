/**
 * Group commit in the application: writes submitted while batches are being written wait and then go
 * together as the next batch, in one statement and one commit. With a batch slot free a write starts at
 * once (on the next microtask, so writes submitted in the same tick share it), so an idle service adds
 * no delay; a busy one makes fewer, larger commits instead of queueing on row locks and fsyncs.
 *
 * `maxInFlight` batches may be written at once (default 1: each batch after the previous one, for writers
 * whose batches must commit in order, like a stream's events). A writer whose batches are independent
 * (holds, debits: each row decides under its account's lock) lets a second batch start beside one in flight,
 * so a write arriving at moderate load does not wait a whole batch write before its own starts; under
 * saturation every slot is busy and the batches grow as before.
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
  let queue: Waiting<I, O>[] = [];
  let inFlight = 0;
  let scheduled = false;

  function schedule() {
    if (inFlight >= maxInFlight || scheduled || queue.length === 0) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      void flush();
    });
  }

  async function flush() {
    if (inFlight >= maxInFlight || queue.length === 0) return;
    inFlight++;
    const batch = queue.slice(0, options.maxBatch);
    queue = queue.slice(batch.length);
    options.onBatch?.(batch.length);
    // More waiting than this batch takes, and a slot free: the next batch starts beside it.
    schedule();
    try {
      await writeBatch(batch);
    } finally {
      inFlight--;
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
