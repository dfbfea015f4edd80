import { sql } from 'kysely';
import type { JobKind, JobRef } from './job-kind';

/**
 * What a slice writes with its resource so that the engine runs its job: the job's row in the engine's outbox
 * (`jobs`), in the same statement as the resource (`outbox`) or, for a statement creating many, from the columns
 * each of its rows carries (`outboxColumns`, jobOutboxFrom). When the engine had a free slot for it, the row is
 * written already claimed by this process, which then runs the job at once.
 */
export interface JobAdmission {
  readonly kind: JobKind;
  /** This process runs the job as soon as its rows are written: the creator may write it started. */
  readonly runsHere: boolean;
  /**
   * The outbox insert for the resources that the statement's CTE `from` returns (their `id` and `account_id`), as
   * a common table expression of the same statement: `.with('outbox', admission.outbox('run'))`.
   */
  outbox(from: string): OutboxExpression;
  /** The outbox row's columns, for a statement creating many resources (jobOutboxFrom). */
  readonly outboxColumns: JobOutboxColumns;
}

/** What an admission's write answers: the resource whose job to start (none: nothing was written) and its result. */
export interface Admitted<Result> {
  jobId: string | undefined;
  /** Handed to the job's first step when it runs in this process (job-handoff.ts). */
  handoff?: unknown;
  result: Result;
}

/** The columns an outbox row is written from (jobOutboxFrom): the kind, and the claim when this process runs it. */
export interface JobOutboxColumns {
  job_kind: JobKind;
  /** The claiming process (a row written `running`, first attempt), or null for a `pending` row. */
  job_owner: string | null;
  /** The claim's lease, from the database's now. */
  job_lease_ms: number | null;
}

/**
 * A kysely common table expression (the callback `with` takes) whose SQL is the outbox insert. Typed to fit any
 * statement's `with`: kysely takes any expression there (it only asks for its operation node), but its types know
 * only its own query builders; nothing selects from the outbox, so its row type does not matter.
 */
export type OutboxExpression = (creator: unknown) => never;

/** How a new job's row is claimed by the process that writes it, when it runs the job itself. */
export interface JobClaim {
  owner: string;
  leaseMs: number;
}

/**
 * A slot of this process for a job about to be written (embedded engine): the row is written claimed by it, and
 * exactly one of `run` (the row committed) or `release` (nothing was written) follows.
 */
export interface JobSlot {
  readonly claim: JobClaim;
  run(job: JobRef, handoff: unknown): void;
  release(): void;
}

/**
 * The outbox insert of the rows a CTE `from` carries with the columns of JobOutboxColumns (and their `id` and
 * `account_id`).
 */
export function jobOutboxFrom(from: string) {
  return sql`insert into jobs (id, kind, account_id, status, lease_owner, lease_expires_at, attempts)
    select id, job_kind, account_id, case when job_owner is null then 'pending' else 'running' end, job_owner,
      now() + job_lease_ms * interval '1 millisecond', case when job_owner is null then 0 else 1 end
    from ${sql.table(from)}`;
}

function jobAdmission(kind: JobKind, claim: JobClaim | undefined): JobAdmission {
  const outboxColumns: JobOutboxColumns = {
    job_kind: kind,
    job_owner: claim?.owner ?? null,
    job_lease_ms: claim?.leaseMs ?? null,
  };
  return {
    kind,
    runsHere: claim !== undefined,
    outboxColumns,
    outbox: (from) => {
      const insert = claim
        ? sql`insert into jobs (id, kind, account_id, status, lease_owner, lease_expires_at, attempts)
            select id, ${kind}::text, account_id, 'running', ${claim.owner}::text,
              now() + ${claim.leaseMs}::integer * interval '1 millisecond', 1
            from ${sql.table(from)}`
        : sql`insert into jobs (id, kind, account_id) select id, ${kind}::text, account_id from ${sql.table(from)}`;
      // Parenthesised here: kysely writes a raw expression as it is, and a CTE's body needs them.
      return () => sql`(${insert})` as never;
    },
  };
}

/**
 * Engine.admit for both engines: the write with its admission, then the job run in `slot` (when this process had
 * one free) or launched; a write that throws or writes nothing gives the slot back.
 */
export async function admitJob<Result>(
  kind: JobKind,
  write: (admission: JobAdmission) => Promise<Admitted<Result>>,
  slot: JobSlot | undefined,
  launch: (job: JobRef) => Promise<void>,
): Promise<Result> {
  let admitted: Admitted<Result>;
  try {
    admitted = await write(jobAdmission(kind, slot?.claim));
  } catch (error) {
    slot?.release();
    throw error;
  }
  const { jobId, handoff, result } = admitted;
  if (jobId === undefined) slot?.release();
  else if (slot) slot.run({ id: jobId, kind }, handoff);
  else await launch({ id: jobId, kind });
  return result;
}
