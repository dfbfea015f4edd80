import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/database';
import type { JobKind } from './job-kind';
import type { JobRow } from './jobs.table';
import { ownerHasDied } from './liveness';

/** What a claim writes and may take: the claiming process, the kinds it knows, its lease. */
interface ClaimBy {
  owner: string;
  /** Only kinds this process knows (a newer replica may write kinds that an older one cannot run). */
  kinds: JobKind[];
  leaseUntil: () => RawBuilder<Date>;
}

const claimed = (by: ClaimBy) => ({
  status: 'running' as const,
  lease_owner: by.owner,
  lease_expires_at: by.leaseUntil(),
  attempts: sql<number>`attempts + 1`,
  updated_at: sql<Date>`now()`,
});

/**
 * Claims up to `limit` claimable jobs, oldest first, with FOR UPDATE SKIP LOCKED: pending ones whose (retry or
 * sleep) time has come, running ones whose lease expired and, with `takeOverDead`, running ones whose owner's
 * liveness lock is free (its process died; liveness.ts).
 */
export async function claimJobs(db: Db, by: ClaimBy & { limit: number; takeOverDead: boolean }): Promise<JobRow[]> {
  return db
    .updateTable('jobs')
    .set(claimed(by))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('jobs')
        .select('id')
        .where('kind', 'in', by.kinds)
        // A pending job's lease_expires_at, when set, is the time its retry (or the end of its sleep) may start.
        .where((w) =>
          w.or([
            w.and([
              w('status', '=', 'pending'),
              w.or([w('lease_expires_at', 'is', null), w('lease_expires_at', '<', sql<Date>`now()`)]),
            ]),
            w.and([w('status', '=', 'running'), w('lease_expires_at', '<', sql<Date>`now()`)]),
            // The dead owner's lock is taken here until commit, so two processes cannot both claim its job.
            ...(by.takeOverDead
              ? [w.and([w('status', '=', 'running'), w('lease_owner', '<>', by.owner), ownerHasDied])]
              : []),
          ]),
        )
        .orderBy('created_at')
        .limit(by.limit)
        .forUpdate()
        .skipLocked(),
    )
    .returningAll()
    .execute();
}

/** Claims one pending job whatever its retry or sleep time (a cancel that must run its short path now). */
export async function claimPendingJob(db: Db, by: ClaimBy & { id: string }): Promise<JobRow | undefined> {
  return db
    .updateTable('jobs')
    .set(claimed(by))
    .where('id', '=', by.id)
    .where('status', '=', 'pending')
    .where('kind', 'in', by.kinds)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Gives back jobs a stopping process claimed but will not run (its claim was in flight when it began to stop): claimable
 * again at once, and the claim does not count as an attempt.
 */
export async function releaseClaims(db: Db, owner: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('jobs')
    .set({
      status: 'pending',
      lease_owner: null,
      lease_expires_at: null,
      attempts: sql<number>`attempts - 1`,
      updated_at: sql<Date>`now()`,
    })
    .where('id', 'in', ids)
    .where('lease_owner', '=', owner)
    .execute();
}
