import type { Db } from './database';

/**
 * Postgres rolls back a transaction it cannot order against concurrent ones: a deadlock (40P01) or, under
 * serializable isolation, a serialization failure (40001). Nothing of it was written, and the same work run again
 * alone succeeds, so such a failure is the service's to retry, never the client's to see as a 500.
 */
const CONFLICT_CODES = new Set(['40001', '40P01']);

/** The attempts in all, first included; the conflicting transactions are gone long before the last. */
const MAX_ATTEMPTS = 5;

export function isTransactionConflict(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && CONFLICT_CODES.has(code);
}

/**
 * Runs `attempt` (one statement, or one whole transaction) again while Postgres rolls it back for a conflict, after
 * a short random pause that grows with each try, so the transactions that collided do not collide again in step.
 * `attempt` must write nothing outside the database before it commits.
 */
export async function retryingConflicts<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (tries >= MAX_ATTEMPTS || !isTransactionConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * tries));
    }
  }
}

/**
 * `fn` in a transaction retried on a conflict (retryingConflicts); inside a caller's transaction it joins it, and
 * the conflict is the caller's to retry, whose transaction Postgres rolled back whole.
 */
export function transactionRetryingConflicts<T>(executor: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  if (executor.isTransaction) return fn(executor);
  return retryingConflicts(() => executor.transaction().execute(fn));
}
