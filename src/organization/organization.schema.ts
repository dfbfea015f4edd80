import { z } from 'zod';
import { queryInteger } from '../http/validation';
import { MAX_KEY_LIFETIME_SECONDS } from '../accounts/api-keys';
import { RESPONSE_STATUSES } from '../responses/response-types';
import { RUN_STATUSES } from '../threads/runs.table';

/**
 * GET /v2/organization/transactions. `limit` is required (spec, Limits: 1-200, required). Unknown query
 * parameters are ignored, as on the other list endpoints (clients add cache-busters). `service` and `model`
 * keep the transactions whose metadata names exactly that service (`responses`, `chat`, ...) or model code.
 */
export const transactionsQuerySchema = z.object({
  limit: z
    .string({
      error: (issue) => (issue.input === undefined ? 'limit is required: an integer from 1 to 200' : undefined),
    })
    .pipe(queryInteger(1, 200)),
  after_id: z.string().min(1).max(128).optional(),
  service: z.string().min(1).max(128).optional(),
  model: z.string().min(1).max(128).optional(),
});

/** POST /v2/organization/keys. Text Postgres cannot store (U+0000) is refused by the body reader (http/json-limits.ts). */
export const createKeySchema = z.strictObject({
  name: z.string().trim().min(1).max(100).optional(),
  expires_in_seconds: z.number().int().min(60).max(MAX_KEY_LIFETIME_SECONDS).optional(),
});

/** POST /v2/organization/keys/{id}/disable: the body is optional; `confirm_self` lets a caller disable its own key. */
export const disableKeySchema = z.strictObject({
  confirm_self: z.boolean().optional(),
});

/** The widest range GET /v2/organization/usage sums over (a year, leap day included). */
export const USAGE_MAX_RANGE_SECONDS = 366 * 24 * 3600;
/** Without `from`: this long before `to`. */
export const USAGE_DEFAULT_RANGE_SECONDS = 30 * 24 * 3600;

const unixSecondsQuery = queryInteger(0, 253_402_300_799);

/**
 * GET /v2/organization/usage. The range rules (from < to, at most 366 days) need `now` for their defaults, so
 * the service checks them. Unknown parameters are refused, as on the cursor-paged lists: a typo (`groupby`)
 * would otherwise silently answer another grouping.
 */
export const usageQuerySchema = z.strictObject({
  from: unixSecondsQuery.optional(),
  to: unixSecondsQuery.optional(),
  group_by: z.enum(['day', 'model', 'service'], { error: "group_by must be 'day', 'model' or 'service'" }).optional(),
});

export type UsageGrouping = NonNullable<z.output<typeof usageQuerySchema>['group_by']>;

/** The account's activity lists: newest first, `after` the last id of the previous page, refused when unknown (lists.ts). */
const activityQuery = <Status extends readonly [string, ...string[]]>(statuses: Status) =>
  z.strictObject({
    limit: queryInteger(1, 100).optional(),
    after: z.string().min(1).max(128).optional(),
    status: z.enum(statuses, { error: `status must be one of ${statuses.join(', ')}` }).optional(),
  });

/** GET /v2/organization/responses. */
export const responsesQuerySchema = activityQuery(RESPONSE_STATUSES);
/** GET /v2/organization/runs. */
export const runsQuerySchema = activityQuery(RUN_STATUSES);
