/**
 * Group commit in the application: writes submitted while one batch is being written wait and then go
 * together as the next batch, in one statement and one commit. With nothing in flight a write starts at
 * once (on the next microtask, so writes submitted in the same tick share it), so an idle service adds
 * no delay; a busy one makes fewer, larger commits instead of queueing on row locks and fsyncs.
 *
 * `write` gets a batch and answers one result per item, in order. When a batch of several fails, each
 * item is retried alone, so one bad item (an account deleted meanwhile, say) fails only its own caller.
 */
export interface GroupCommitOptions<I, O> {
  write: (items: I[]) => Promise<O[]>;
  /** Largest batch (bounded by the statement's parameter count). */
  maxBatch: number;
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
  let queue: Waiting<I, O>[] = [];
  let writing = false;
  let scheduled = false;

  function schedule() {
    if (writing || scheduled || queue.length === 0) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      void flush();
    });
  }

  async function flush() {
    if (writing || queue.length === 0) return;
    writing = true;
    const batch = queue.slice(0, options.maxBatch);
    queue = queue.slice(batch.length);
    options.onBatch?.(batch.length);
    try {
      await writeBatch(batch);
    } finally {
      writing = false;
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
