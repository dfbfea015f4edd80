import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { sql } from 'kysely';
import pg from 'pg';
import type { Logger } from '../logger';

/** The advisory lock class of the liveness locks (the key is hashtext of the lease owner). */
const LIVENESS_LOCK_CLASS = 0x5377;

export interface LivenessLock {
  /** Releases the lock (the process will claim nothing more). */
  end(): Promise<void>;
}

/**
 * A session holding the liveness lock of `owner` (an embedded engine's lease owner name) for as long as the
 * process lives: when the process dies, its session ends and the lock with it, so other processes (its own
 * restart included) see at once that its running jobs have no runner. Should the session drop while the process
 * lives (the database restarted), the lock is taken again as soon as a session can be opened; meanwhile other
 * processes may take over jobs still running here, which the guarded writes of every job turn into a re-run
 * (a repeated vendor call at worst), never a second debit.
 */
export async function holdLivenessLock(
  connectionString: string,
  owner: string,
  logger: Logger,
  stopping: () => boolean,
): Promise<LivenessLock> {
  let client: pg.Client | undefined;
  let ended = false;
  const connect = async () => {
    const next = new pg.Client({ connectionString });
    next.on('error', (error) => logger.warn({ err: error }, 'liveness session failed'));
    next.once('end', () => {
      if (client !== next || ended || stopping()) return;
      client = undefined;
      logger.warn('liveness session lost: taking the lock again');
      void reconnect();
    });
    await next.connect();
    await next.query('select pg_advisory_lock($1, hashtext($2))', [LIVENESS_LOCK_CLASS, owner]);
    if (ended || stopping()) {
      // Stopped while this session was being opened: nobody would end it.
      await next.end().catch(() => undefined);
      return;
    }
    // The session lives as long as the process and must not be what keeps a stopped process alive (a stop with
    // jobs still running leaves it open on purpose, so they are not taken over while they run).
    (next as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
    client = next;
  };
  const reconnect = async () => {
    while (!ended && !stopping() && !client) {
      await new Promise((resolve) => setTimeout(resolve, 250).unref());
      await connect().catch((error) => logger.warn({ err: error }, 'liveness lock not taken yet; retrying'));
    }
  };
  await connect();
  return {
    async end() {
      ended = true;
      await client?.end().catch(() => undefined);
    },
  };
}

/**
 * True for a `jobs` row whose lease owner's liveness lock is free (its process died). The lock is then taken by
 * the asking transaction until it commits, so two processes cannot both see the owner dead and claim its job.
 */
export const ownerHasDied = ownerDied('lease_owner');

/** The same test on any column naming an owner (the holds of a process: billing/ledger.ts). */
export function ownerDied(column: string) {
  return sql<boolean>`pg_try_advisory_xact_lock(${sql.lit(LIVENESS_LOCK_CLASS)}, hashtext(${sql.ref(column)}))`;
}

/** A process's name as the owner of leases, liveness lock and billing holds: host, pid and a random part. */
export function newOwnerName(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}
