import type { Context, Middleware, Next } from 'koa';
import { sql } from 'kysely';
import type { AuthContext } from '../accounts/accounts.service';
import type { AccountLimits } from '../config';
import type { Db } from '../db/database';
import { rateLimited } from '../errors';
import { ACTIVE_RUN_STATUSES } from '../threads/runs.table';

/** What a route that starts model work declares (modelWork): whether it also starts a durable job (a Response, a Run). */
export interface ModelWork {
  job: boolean;
}

type AdmitWork = (work: ModelWork) => Promise<void>;

const ADMIT_WORK = Symbol('admitWork');

/**
 * Declared on a route that starts model work, before its handler: tokens per minute apply to it, and with `job` the
 * limit of concurrent jobs too. The route says so itself, on every surface it is mounted on (/v2, /v1, /openai/v1),
 * rather than a list of paths naming some of them; the checks are those of the account's limits (enforce below).
 */
export const modelWork = (work: ModelWork): Middleware => {
  const declared: Middleware = async (ctx, next) => {
    const admit = (ctx.state as { [ADMIT_WORK]?: AdmitWork })[ADMIT_WORK];
    if (admit) await admit(work);
    return next();
  };
  return Object.assign(declared, { modelWork: work });
};

/** The model work a route's middleware declares (route-walking checks read it), or undefined. */
export const declaredModelWork = (middleware: unknown): ModelWork | undefined =>
  (middleware as { modelWork?: ModelWork }).modelWork;

/**
 * Per-account limits (api-decisions 26): requests per minute on every API request, tokens per minute and
 * concurrent jobs on the requests that start model work (the routes that declare it, modelWork). Over a limit: 429 `request.rate_limited` with
 * Retry-After. Every count is read from the database (request_windows, the ledger, the jobs' own rows), so
 * replicas on one Postgres share them; an account with no limit costs no query.
 */
export function createAccountLimits(deps: { db: Db; defaults: AccountLimits }) {
  const { db, defaults } = deps;

  function limitsOf(auth: AuthContext): AccountLimits {
    const own = auth.account.limits;
    return {
      requestsPerMinute: own.requestsPerMinute ?? defaults.requestsPerMinute,
      tokensPerMinute: own.tokensPerMinute ?? defaults.tokensPerMinute,
      concurrentJobs: own.concurrentJobs ?? defaults.concurrentJobs,
    };
  }

  /** Counts the request in its account's current minute (a fixed window); over the limit until the window ends. */
  async function admitRequest(accountId: string, limit: number): Promise<void> {
    const counted = await sql<{ requests: number; left_ms: number }>`
      insert into request_windows as w (account_id, window_start, requests)
      values (${accountId}, date_trunc('minute', now()), 1)
      on conflict (account_id, window_start) do update set requests = w.requests + 1
      returning requests, extract(epoch from (window_start + interval '1 minute' - now())) * 1000 as left_ms`.execute(
      db,
    );
    const row = counted.rows[0]!;
    if (row.requests > limit) {
      throw rateLimited(
        `This account is limited to ${limit} requests per minute; retry after the minute ends.`,
        Number(row.left_ms) / 1000,
      );
    }
  }

  /** Tokens billed in the last minute (the ledger's debits): at or over the limit, until the oldest leaves the minute. */
  async function admitTokens(accountId: string, limit: number): Promise<void> {
    const used = await sql<{ tokens: string | number | null; oldest_left_ms: string | number | null }>`
      select sum((usage ->> 'total_tokens')::bigint) as tokens,
        extract(epoch from (min(created_at) + interval '1 minute' - now())) * 1000 as oldest_left_ms
      from ledger_transactions
      where account_id = ${accountId} and type = 'debit' and created_at > now() - interval '1 minute' and usage ? 'total_tokens'`.execute(
      db,
    );
    const tokens = Number(used.rows[0]?.tokens ?? 0);
    if (tokens >= limit) {
      throw rateLimited(
        `This account is limited to ${limit} tokens per minute and used ${tokens} in the last minute.`,
        Number(used.rows[0]?.oldest_left_ms ?? 60_000) / 1000,
      );
    }
  }

  /** Responses queued or running and Runs not yet ended, against the limit of concurrent jobs. */
  async function admitJob(accountId: string, limit: number): Promise<void> {
    const active = await sql<{ jobs: string | number }>`
      select (select count(*) from responses where account_id = ${accountId} and status in ('queued', 'in_progress'))
        + (select count(*) from runs where account_id = ${accountId} and status in (${sql.join(ACTIVE_RUN_STATUSES.map((status) => sql.lit(status)))})) as jobs`.execute(
      db,
    );
    const jobs = Number(active.rows[0]?.jobs ?? 0);
    if (jobs >= limit)
      throw rateLimited(
        `This account may run ${limit} Responses and Runs at a time and has ${jobs} running; retry when one ends.`,
        1,
      );
  }

  /** Middleware after authentication. */
  async function enforce(ctx: Context, next: Next): Promise<void> {
    const auth = ctx.state.auth as AuthContext | undefined;
    if (!auth) return next();
    const limits = limitsOf(auth);
    if (limits.requestsPerMinute > 0) await admitRequest(auth.accountId, limits.requestsPerMinute);
    // Routes that start model work call this first (modelWork above).
    const admitWork: AdmitWork = async (work) => {
      if (limits.tokensPerMinute > 0) await admitTokens(auth.accountId, limits.tokensPerMinute);
      if (work.job && limits.concurrentJobs > 0) await admitJob(auth.accountId, limits.concurrentJobs);
    };
    (ctx.state as { [ADMIT_WORK]?: AdmitWork })[ADMIT_WORK] = admitWork;
    return next();
  }

  /** Forgets windows that have ended (called with the other periodic sweeps). */
  async function sweepWindows(): Promise<void> {
    await db
      .deleteFrom('request_windows')
      .where('window_start', '<', sql<Date>`now() - interval '2 minutes'`)
      .execute();
  }

  return { enforce, sweepWindows };
}

export type AccountLimitsService = ReturnType<typeof createAccountLimits>;
