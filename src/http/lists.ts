import type { Context } from 'koa';
import { z } from 'zod';
import { replyTurns } from '../event-loop-turns';
import type { Page } from '../db/keyset-page';
import { queryInteger } from './validation';

/**
 * Query of the cursor-paged lists (conversations, conversation items, thread messages). Unknown parameters are
 * refused so that a typo (`ordr=asc`) is a 400 rather than a silently different page. Repeated parameters
 * arrive as arrays and fail the string check.
 */
export const listQuerySchema = z
  .strictObject({
    limit: queryInteger(1, 100).optional(),
    order: z.enum(['asc', 'desc'], { error: "order must be 'asc' or 'desc'" }).optional(),
    after: z.string().min(1).max(128).optional(),
    before: z.string().min(1).max(128).optional(),
  })
  .refine((query) => !(query.after && query.before), 'after and before cannot be used together');

export type ListQuery = z.infer<typeof listQuerySchema>;

/** api-decisions 2: `{object: "list", data, first_id, last_id, has_more}`, ids null when the page is empty. */
export function toListEnvelope<Row, Wire extends { id: string }>(page: Page<Row>, toWire: (row: Row) => Wire) {
  const data = page.rows.map(toWire);
  return {
    object: 'list' as const,
    data,
    first_id: data.length ? data[0].id : null,
    last_id: data.length ? data[data.length - 1].id : null,
    has_more: page.hasMore,
  };
}

/**
 * A list reply's JSON text is built at most this many bytes at a time, each slice in a turn of the event loop the
 * process-wide scheduler gives it (src/event-loop-turns.ts): one JSON.stringify of a 4 MiB page (and its encoding
 * for the socket) for each of a crowd of readers made turns in which nothing else was served.
 */
export const SERIALISE_SLICE_BYTES = 256 * 1024;

/**
 * A page of large rows (conversation items, thread messages) as the reply's body: the envelope of toListEnvelope,
 * byte for byte, built an item at a time, `sliceBytes` of text (or one item) per turn of the event loop, and handed
 * over as bytes (the socket then holds the one copy it sends).
 */
export async function setListBody<Row, Wire extends { id: string }>(
  ctx: Context,
  page: Page<Row>,
  toWire: (row: Row) => Wire,
  sliceBytes = SERIALISE_SLICE_BYTES,
): Promise<void> {
  const parts: Buffer[] = [Buffer.from('{"object":"list","data":[')];
  let firstId: string | null = null;
  let lastId: string | null = null;
  let sinceTurn = sliceBytes;
  for (const row of page.rows) {
    if (sinceTurn >= sliceBytes) {
      await replyTurns.slice(sliceBytes);
      sinceTurn = 0;
    }
    const wire = toWire(row);
    const text = Buffer.from(`${firstId === null ? '' : ','}${JSON.stringify(wire)}`);
    firstId ??= wire.id;
    lastId = wire.id;
    parts.push(text);
    sinceTurn += text.length;
  }
  const ids = `"first_id":${JSON.stringify(firstId)},"last_id":${JSON.stringify(lastId)}`;
  parts.push(Buffer.from(`],${ids},"has_more":${page.hasMore}}`));
  ctx.body = Buffer.concat(parts);
  ctx.type = 'application/json';
}
