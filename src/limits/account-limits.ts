import type { Context, Next } from 'koa';
import { sql } from 'kysely';
import type { AuthContext } from '../accounts/accounts.service';
import type { AccountLimits } from '../config';
import type { Db } from '../db/database';
import { rateLimited } from '../errors';
import { ACTIVE_RUN_STATUSES } from '../threads/runs.table';

/**
 * Requests that start model work, by method and path: tokens per minute apply to them, and to those that start a
 * durable job (a Response, a Run) the limit of concurrent jobs too. One list, beside the checks it selects.
 */
const MODEL_WORK: Array<{ path: RegExp; job: boolean }> = [
  { path: /^\/v2\/responses$/, job: true },
  { path: /^\/v2\/threads\/runs$/, job: true },
  { path: /^\/v2\/threads\/[^/]+\/runs$/, job: true },
  { path: /^\/(v1|v2|openai\/v1)\/chat\/completions$/, job: false },
  { path: /^\/(v2|openai\/v1)\/embeddings$/, job: false },
];

/**
 * Per-account limits (DECISIONS.md 26): requests per minute on every API request, tokens per minute and
 * concurrent jobs on the requests that start model work. Over a limit: 429 `request.rate_limited` with
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
      returning requests, extract(epoch from (window_start + interval '1 minute' - now())) * 1000 as left_ms`.execute(db);
    const row = counted.rows[0]!;
    if (row.requests > limit) {
      throw rateLimited(`This account is limited to ${limit} requests per minute; retry after the minute ends.`, Number(row.left_ms) / 1000);
    }
  }

  /** Tokens billed in the last minute (the ledger's debits): at or over the limit, until the oldest leaves the minute. */
  async function admitTokens(accountId: string, limit: number): Promise<void> {
    const used = await sql<{ tokens: string | number | null; oldest_left_ms: string | number | null }>`
      select sum((usage ->> 'total_tokens')::bigint) as tokens,
        extract(epoch from (min(created_at) + interval '1 minute' - now())) * 1000 as oldest_left_ms
      from ledger_transactions
      where account_id = ${accountId} and type = 'debit' and created_at > now() - interval '1 minute' and usage ? 'total_tokens'`.execute(db);
    const tokens = Number(used.rows[0]?.tokens ?? 0);
    if (tokens >= limit) {
      throw rateLimited(`This account is limited to ${limit} tokens per minute and used ${tokens} in the last minute.`, Number(used.rows[0]?.oldest_left_ms ?? 60_000) / 1000);
    }
  }

  /** Responses queued or running and Runs not yet ended, against the limit of concurrent jobs. */
  async function admitJob(accountId: string, limit: number): Promise<void> {
    const active = await sql<{ jobs: string | number }>`
      select (select count(*) from responses where account_id = ${accountId} and status in ('queued', 'in_progress'))
        + (select count(*) from runs where account_id = ${accountId} and status in (${sql.join(ACTIVE_RUN_STATUSES.map((status) => sql.lit(status)))})) as jobs`.execute(db);
    const jobs = Number(active.rows[0]?.jobs ?? 0);
    if (jobs >= limit) throw rateLimited(`This account may run ${limit} Responses and Runs at a time and has ${jobs} running; retry when one ends.`, 1);
  }

  /** Middleware after authentication. */
  async function enforce(ctx: Context, next: Next): Promise<void> {
    const auth = ctx.state.auth as AuthContext | undefined;
    if (!auth) return next();
    const limits = limitsOf(auth);
    if (limits.requestsPerMinute > 0) await admitRequest(auth.accountId, limits.requestsPerMinute);
    if (ctx.method === 'POST' && (limits.tokensPerMinute > 0 || limits.concurrentJobs > 0)) {
      const work = MODEL_WORK.find((entry) => entry.path.test(ctx.path));
      if (work && limits.tokensPerMinute > 0) await admitTokens(auth.accountId, limits.tokensPerMinute);
      if (work?.job && limits.concurrentJobs > 0) await admitJob(auth.accountId, limits.concurrentJobs);
    }
    return next();
  }

  /** Forgets windows that have ended (called with the other periodic sweeps). */
  async function sweepWindows(): Promise<void> {
    await db.deleteFrom('request_windows').where('window_start', '<', sql<Date>`now() - interval '2 minutes'`).execute();
  }

  return { enforce, sweepWindows };
}

export type AccountLimitsService = ReturnType<typeof createAccountLimits>;
