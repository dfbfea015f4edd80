import { sql, type SelectQueryBuilder } from 'kysely';
import { replyTurns } from '../event-loop-turns';
import type { Database } from './schema';

/**
 * Keyset pagination over a table's `seq` (bigserial: insertion order), shared by every list that pages with
 * `after`/`before` cursors (conversations, conversation items, thread messages). No OFFSET, so page N costs the
 * same as page 1.
 */

/** The tables that have a `seq` column. */
export type SeqTable = { [T in keyof Database]: 'seq' extends keyof Database[T] ? T : never }[keyof Database];

export interface PageRequest {
  limit: number;
  order: 'asc' | 'desc';
  /** `seq` of the cursor row: the page starts just past it in `order`. */
  afterSeq?: number;
  /** `seq` of the cursor row: the page ends just before it in `order`. */
  beforeSeq?: number;
}

export interface Page<Row> {
  rows: Row[];
  hasMore: boolean;
}

/** A list query's cursor fields as the HTTP layer validated them (src/http/lists.ts). */
export interface PageQuery {
  limit?: number;
  order?: 'asc' | 'desc';
  after?: string;
  before?: string;
}

export const DEFAULT_PAGE_SIZE = 20;

/**
 * A page of rows stops early (with has_more) once it holds this many bytes: one row may be megabytes (a whole
 * 10 MiB request body), and a page of a hundred such is more than a reply should hold. Each reply in the making
 * costs the process a few times its size (rows, wire objects, the JSON text), so this bounds what a crowd of
 * readers can make it hold at once; the HTTP server bounds what waits for clients that do not read.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * Lists default to newest first (as the real service); `order=asc` gives a history oldest first. A cursor must
 * name a row of the list being read: `cursorSeq` looks it up and throws the list's 400 when it does not.
 */
export async function toPageRequest(
  query: PageQuery,
  cursorSeq: (id: string) => Promise<number>,
): Promise<PageRequest> {
  return {
    limit: query.limit ?? DEFAULT_PAGE_SIZE,
    order: query.order ?? 'desc',
    afterSeq: query.after ? await cursorSeq(query.after) : undefined,
    beforeSeq: query.before ? await cursorSeq(query.before) : undefined,
  };
}

/**
 * The page as a query: `seq > cursor ORDER BY seq LIMIT n+1` (the extra row says has_more). `before` pages are
 * read walking away from the cursor (nearest rows first) and reversed afterwards by finishPage, so they come
 * back in the requested order.
 */
export function pageQuery<T extends SeqTable, O>(
  query: SelectQueryBuilder<Database, T, O>,
  page: PageRequest,
): SelectQueryBuilder<Database, T, O> {
  const cursor = page.beforeSeq ?? page.afterSeq;
  const readAscending = readsAscending(page);
  let limited = query as unknown as SelectQueryBuilder<Database, SeqTable, O>;
  if (cursor !== undefined) limited = limited.where('seq', readAscending ? '>' : '<', cursor);
  return limited.orderBy('seq', readAscending ? 'asc' : 'desc').limit(page.limit + 1) as unknown as SelectQueryBuilder<
    Database,
    T,
    O
  >;
}

/** The direction a page's rows are read in: the requested order, or its opposite for `before`. */
export function readsAscending(page: PageRequest): boolean {
  return (page.order === 'asc') !== (page.beforeSeq !== undefined);
}

/** Rows as pageQuery read them (up to limit + 1) → the page, in the requested order. */
export function finishPage<Row>(rows: Row[], page: PageRequest): Page<Row> {
  const hasMore = rows.length > page.limit;
  const kept = rows.slice(0, page.limit);
  if (page.beforeSeq !== undefined) kept.reverse();
  return { rows: kept, hasMore };
}

export async function runPage<T extends SeqTable, O>(
  query: SelectQueryBuilder<Database, T, O>,
  page: PageRequest,
): Promise<Page<O>> {
  return finishPage(await pageQuery(query, page).execute(), page);
}

/**
 * Rows of a large page are read in queries of at most this many bytes each (at least one row), each in a turn of
 * the event loop the process-wide scheduler gives it (src/event-loop-turns.ts): a query's rows are parsed in one go
 * (on PGlite the whole query runs in this thread), and a 4 MiB page read at once made turns of hundreds of
 * milliseconds when a crowd asked for such pages, in which no other request, /healthz included, was served.
 */
export const READ_SLICE_BYTES = 512 * 1024;

/**
 * A page that also stops early, with has_more, once its rows hold `maxBytes` (at least one row always comes
 * back). `sizes` is the same filtered query selecting each row's `seq` and `bytes` (computed by the database
 * without sending the row); it is read first, in the order the page is read (nearest the cursor first), so
 * rows past the limit are never loaded, and the rows that fit are then read by their `seq`, READ_SLICE_BYTES at a
 * time.
 */
export async function runPageWithinBytes<T extends SeqTable, O>(
  rows: SelectQueryBuilder<Database, T, O>,
  sizes: SelectQueryBuilder<Database, T, { seq: number; bytes: number }>,
  page: PageRequest,
  maxBytes = MAX_PAGE_BYTES,
  sliceBytes = READ_SLICE_BYTES,
): Promise<Page<O>> {
  if (page.limit === 1) return runPage(rows, page);
  const measured = await pageQuery(sizes, page).execute();
  let bytes = 0;
  let fitting = 0;
  for (const size of measured.slice(0, page.limit)) {
    bytes += Number(size.bytes);
    if (fitting > 0 && bytes > maxBytes) break;
    fitting++;
  }
  const kept: O[] = [];
  for (const slice of slicesOf(measured.slice(0, fitting), sliceBytes)) {
    await replyTurns.slice(slice.reduce((sum, size) => sum + Number(size.bytes), 0));
    const seqs = slice.map((size) => size.seq);
    const read = (rows as unknown as SelectQueryBuilder<Database, SeqTable, O>)
      .where(sql<boolean>`seq = any(${seqs}::bigint[])`)
      .orderBy('seq', readsAscending(page) ? 'asc' : 'desc');
    kept.push(...(await read.execute()));
  }
  return { rows: page.beforeSeq !== undefined ? kept.reverse() : kept, hasMore: measured.length > fitting };
}

/** Consecutive runs of `sizes` of at most `sliceBytes` each (a larger row alone). */
function* slicesOf<Size extends { bytes: number }>(sizes: Size[], sliceBytes: number): Generator<Size[]> {
  let slice: Size[] = [];
  let bytes = 0;
  for (const size of sizes) {
    if (slice.length > 0 && bytes + Number(size.bytes) > sliceBytes) {
      yield slice;
      slice = [];
      bytes = 0;
    }
    slice.push(size);
    bytes += Number(size.bytes);
  }
  if (slice.length > 0) yield slice;
}
