import { z } from 'zod';
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
