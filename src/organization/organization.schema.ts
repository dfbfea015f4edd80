import { z } from 'zod';
import { queryInteger } from '../http/validation';

/**
 * GET /v2/organization/transactions. `limit` is required (spec, Limits: 1-200, required). Unknown query
 * parameters are ignored, as on the other list endpoints (clients add cache-busters).
 */
export const transactionsQuerySchema = z.object({
  limit: z
    .string({ error: (issue) => (issue.input === undefined ? 'limit is required: an integer from 1 to 200' : undefined) })
    .pipe(queryInteger(1, 200)),
  after_id: z.string().min(1).max(128).optional(),
});
