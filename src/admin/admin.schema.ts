import { z } from 'zod';
import { MAX_KEY_LIFETIME_SECONDS } from '../accounts/api-keys';
import { queryInteger } from '../http/validation';

/** The operators' request bodies and queries (src/admin/admin.routes.ts). */

/** Text Postgres cannot store (U+0000) is refused by the body reader (http/json-limits.ts), as for every route. */
const storedName = z.string().trim().min(1).max(256);

export const createAccountSchema = z.strictObject({
  name: storedName,
  balance: z.number().int().min(0).max(1e12).optional(),
  mcp_enabled: z.boolean().optional(),
});
/** A limit: a positive whole number, or null for the configured default. */
const limit = (max: number) => z.number().int().positive().max(max).nullable().optional();
export const updateAccountSchema = z.strictObject({
  name: storedName.optional(),
  mcp_enabled: z.boolean().optional(),
  limits: z
    .strictObject({
      requests_per_minute: limit(10_000_000),
      tokens_per_minute: limit(2_000_000_000),
      concurrent_jobs: limit(1_000_000),
    })
    .optional(),
});
export const listAccountsQuery = z.strictObject({
  name: z.string().trim().min(1).max(256).optional(),
  limit: queryInteger(1, 100).optional(),
  after: z.string().min(1).max(128).optional(),
});
export const creditSchema = z.strictObject({
  amount: z.number().int().positive().max(1e12),
  note: z.string().max(512).optional(),
});
/** An operator's debit or refund: whole kopecks, why, and a key that makes a repeat of it a no-op. */
export const adjustmentSchema = z.strictObject({
  type: z.enum(['debit', 'refund']),
  amount: z.number().int().positive().max(1e12),
  reason: z.string().trim().min(1).max(512),
  idempotency_key: z.string().min(1).max(255),
});
export const createKeySchema = z.strictObject({
  name: storedName.optional(),
  expires_in: z.number().int().positive().max(MAX_KEY_LIFETIME_SECONDS).optional(),
});
