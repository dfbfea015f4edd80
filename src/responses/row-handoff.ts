import type { ResponseRow } from './responses.table';

export interface HandedRow {
  row: ResponseRow;
  /** The sequence number the Response's next event takes, when the hander knows it. */
  nextSequence?: number;
  /** Written already started (in_progress, both lifecycle events) by its creator, which runs its job itself. */
  startedAtCreation?: boolean;
}

/**
 * Rows this process has just read or written, handed from one step of a Response to the next (creation →
 * startResponse → callProvider → finalizeResponse) so the next does not read them again. Each entry is taken
 * once; a miss (another worker ran the previous step, a retry, a re-run after a crash) reads the database, so
 * the handoff only ever saves work. Bounded: the oldest entries go first.
 */
export class RowHandoff {
  private readonly entries = new Map<string, HandedRow>();

  constructor(private readonly capacity = 10_000) {}

  put(id: string, entry: HandedRow) {
    this.entries.delete(id);
    this.entries.set(id, entry);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  take(id: string): HandedRow | undefined {
    const entry = this.entries.get(id);
    this.entries.delete(id);
    return entry;
  }
}
