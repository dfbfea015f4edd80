import type { SelectQueryBuilder } from 'kysely';
import type { SeqTable } from './keyset-page';
import type { Database } from './schema';

/** The history a prompt is built from: the latest rows that fit a token budget (see latestWithinBudget). */
export interface LatestRows<Row> {
  /** Oldest first. */
  rows: Row[];
  /** False when an older row (within `limit`) did not fit and was left out. */
  complete: boolean;
  /** Estimated tokens of the rows examined, the first one that did not fit included. */
  tokensSeen: number;
}

/**
 * Sizes are read newest first in pages that start small and grow: working out a size reads the whole row (on
 * PGlite, in this process), and a prompt's budget is often spent by the first few.
 */
const FIRST_SIZE_PAGE = 4;
const MAX_SIZE_PAGE = 256;

/**
 * The latest rows of one history (at most `limit`), oldest first, as many as fit `tokenBudget`. `sizes` is the
 * history's filtered query selecting each row's `seq` and its estimated `tokens` (computed by the database);
 * `rows` is the same filter selecting what the caller needs. Sizes are read first, newest first and in pages, and
 * only the rows that fit are loaded: a history may hold gigabytes, and a prompt never needs more than a context
 * window of it. Used by conversations (Responses) and threads (Runs).
 */
export async function latestWithinBudget<T extends SeqTable, O>(
  rows: SelectQueryBuilder<Database, T, O>,
  sizes: SelectQueryBuilder<Database, T, { seq: number; tokens: number }>,
  options: { limit?: number; tokenBudget: number },
): Promise<LatestRows<O>> {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const sized = sizes as unknown as SelectQueryBuilder<Database, SeqTable, { seq: number; tokens: number }>;
  let newest: number | undefined;
  let oldest: number | undefined;
  let count = 0;
  let tokens = 0;
  let complete = true;
  let before: number | undefined;
  let pageSize = FIRST_SIZE_PAGE;
  scan: while (count < limit) {
    const requested = Math.min(pageSize, limit - count);
    const page = await sized
      .$if(before !== undefined, (query) => query.where('seq', '<', before!))
      .orderBy('seq', 'desc')
      .limit(requested)
      .execute();
    for (const { seq, tokens: rowTokens } of page) {
      tokens += Number(rowTokens);
      if (tokens > options.tokenBudget) {
        complete = false;
        break scan;
      }
      newest ??= seq;
      oldest = seq;
      count++;
    }
    if (page.length < requested) break;
    before = page[page.length - 1].seq;
    pageSize = Math.min(pageSize * 4, MAX_SIZE_PAGE);
  }
  const loaded =
    oldest === undefined
      ? []
      : await (rows as unknown as SelectQueryBuilder<Database, SeqTable, O>)
          .where('seq', '>=', oldest)
          .where('seq', '<=', newest!)
          .orderBy('seq', 'asc')
          .execute();
  return { rows: loaded, complete, tokensSeen: tokens };
}
