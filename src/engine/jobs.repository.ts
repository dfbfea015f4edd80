import { sql, type ExpressionBuilder, type RawBuilder } from 'kysely';
import type { Database } from '../db/schema';
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

/** One account's share of a process's job slots (api-decisions 36). */
export interface AccountShare {
  /** Jobs of one account this process runs at once, at most. */
  max: number;
  /** Jobs of each account this process runs (or has promised a slot to) now; '' for jobs without an account. */
  running: ReadonlyMap<string, number>;
}

/**
 * Claims up to `limit` claimable jobs with FOR UPDATE SKIP LOCKED: pending ones whose (retry or sleep) time has
 * come, running ones whose lease expired and, with `takeOverDead`, running ones whose owner's liveness lock is free
 * (its process died; liveness.ts). Accounts are taken in turn (api-decisions 36): a job's place is its rank among its
 * account's claimable jobs plus the account's jobs running here, and lower places go first (then older jobs), so a
 * flood of one account's jobs written first does not make another's wait for all of them; with `share`, no job
 * whose place is beyond the account's share.
 */
export async function claimJobs(
  db: Db,
  by: ClaimBy & { limit: number; takeOverDead: boolean; share?: AccountShare },
): Promise<JobRow[]> {
  const claimable = (eb: ExpressionBuilder<Database, 'jobs'>) =>
    eb.and([
      eb('kind', 'in', by.kinds),
      // A pending job's lease_expires_at, when set, is the time its retry (or the end of its sleep) may start.
      eb.or([
        eb.and([
          eb('status', '=', 'pending'),
          eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', sql<Date>`now()`)]),
        ]),
        eb.and([eb('status', '=', 'running'), eb('lease_expires_at', '<', sql<Date>`now()`)]),
        // The dead owner's lock is taken here until commit, so two processes cannot both claim its job.
        ...(by.takeOverDead
          ? [eb.and([eb('status', '=', 'running'), eb('lease_owner', '<>', by.owner), ownerHasDied])]
          : []),
      ]),
    ]);
  // Each claimable job's turn: 1 for its account's oldest, 2 for the next...
  const ranked = db
    .selectFrom('jobs')
    .select([
      'id',
      'created_at',
      sql<string>`coalesce(account_id, '')`.as('account'),
      sql<number>`row_number() over (partition by account_id order by created_at)`.as('turn'),
    ])
    .where(claimable)
    .as('ranked');
  // Its place among the account's jobs running here and waiting: an account with fewer of them goes first.
  const running = JSON.stringify(Object.fromEntries(by.share?.running ?? []));
  const place = sql<number>`ranked.turn + coalesce((${running}::jsonb ->> ranked.account)::integer, 0)`;
  return db
    .updateTable('jobs')
    .set(claimed(by))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('jobs')
        .select('id')
        .where(claimable)
        .where('id', 'in', (inner) => {
          const fair = inner.selectFrom(ranked).select('ranked.id');
          return (by.share ? fair.where(place, '<=', by.share.max) : fair)
            .orderBy(place)
            .orderBy('ranked.created_at')
            .limit(by.limit);
        })
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
