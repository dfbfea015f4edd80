/**
 * Rows this process has just written or read, handed from one step of a job to the next so the next does not read
 * them again: from its admission to its first step (engine.admit, when this process runs the job at once), then
 * between steps (a Response's startResponse → callProvider → finalizeResponse). Each entry is taken once; a miss
 * (another worker ran the previous step, a retry, a re-run after a crash) reads the database, so the handoff only
 * ever saves work. Keyed by job id (the resource's id); what an entry holds is its kind's affair. Bounded: the
 * oldest entries go first.
 */
export class JobHandoff {
  private readonly entries = new Map<string, unknown>();

  constructor(private readonly capacity = 10_000) {}

  put(id: string, entry: unknown) {
    this.entries.delete(id);
    this.entries.set(id, entry);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  /** The entry for job `id`, of the type its kind puts there. */
  take<Entry>(id: string): Entry | undefined {
    const entry = this.entries.get(id) as Entry | undefined;
    this.entries.delete(id);
    return entry;
  }
}
