import { sql } from 'kysely';
import pg from 'pg';
import type { Logger } from '../logger';

/** The advisory lock class of the liveness locks (the key is hashtext of the lease owner). */
const LIVENESS_LOCK_CLASS = 0x5377;

/**
 * A session holding the liveness lock of `owner` (an embedded engine's lease owner name) for as long as the
 * process lives: when the process dies, its session ends and the lock with it, so other processes (its own
 * restart included) see at once that its running jobs have no runner. Should the session drop while the process
 * lives (the database restarted), the lock is gone and other processes may take over jobs still running here;
 * the lease checks on every write of a job keep that to a re-run, as after a lease expiry.
 */
export async function holdLivenessLock(connectionString: string, owner: string, logger: Logger): Promise<pg.Client> {
  const client = new pg.Client({ connectionString });
  client.on('error', (error) => logger.warn({ err: error }, 'liveness session lost; running jobs may be taken over by their lease rule'));
  await client.connect();
  await client.query('select pg_advisory_lock($1, hashtext($2))', [LIVENESS_LOCK_CLASS, owner]);
  return client;
}

/**
 * True for a `jobs` row whose lease owner's liveness lock is free (its process died). The lock is then taken by
 * the asking transaction until it commits, so two processes cannot both see the owner dead and claim its job.
 */
export const ownerHasDied = sql<boolean>`pg_try_advisory_xact_lock(${sql.lit(LIVENESS_LOCK_CLASS)}, hashtext(lease_owner))`;
