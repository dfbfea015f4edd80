import type { Context } from 'koa';
import { z } from 'zod';
import { parseInput } from './validation';

/** api-decisions 17: at most 255 characters. */
export const idempotencyKeySchema = z.string().min(1).max(255, 'Idempotency-Key is at most 255 characters');

/** The request's Idempotency-Key header, validated (400 `request.invalid_request`), or undefined. */
export function readIdempotencyKey(ctx: Context): string | undefined {
  const raw = ctx.get('idempotency-key');
  return raw ? parseInput(idempotencyKeySchema, raw, 'request') : undefined;
}
