import { sql } from 'kysely';
import type { Db } from '../db/database';
import type { LedgerTransactionRow } from '../billing/ledger.table';
import type { UsageGrouping } from './organization.schema';

/** One group of GET /v2/organization/usage, as the database summed it. */
export interface UsageGroupRow {
  key: string;
  amount: number;
  transactions: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/**
 * What a debit is grouped by. Parameter-free, so the same text in SELECT and GROUP BY is one expression to
 * Postgres. A model or service that is missing or not a string is `none` / `other`, as the billed-kopecks
 * metrics label it (billing/ledger.ts).
 */
const GROUP_KEYS = {
  day: sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`,
  model: sql<string>`case when jsonb_typeof(metadata -> 'model') = 'string' then metadata ->> 'model' else 'none' end`,
  service: sql<string>`case when jsonb_typeof(metadata -> 'service') = 'string' then metadata ->> 'service' else 'other' end`,
} satisfies Record<UsageGrouping, unknown>;

/** Queries over the account's balance and ledger; no transactions, no rules. */
export function createOrganizationRepository(db: Db) {
  /** The balance and what is available of it: less the holds of operations in flight (billing/ledger.ts). */
  async function findBalance(accountId: string): Promise<{ balance: number; available: number } | undefined> {
    const row = await db
      .selectFrom('accounts')
      .select(['balance', 'held'])
      .where('id', '=', accountId)
      .executeTakeFirst();
    return row && { balance: row.balance, available: row.balance - row.held };
  }

  async function findTransactionSeq(accountId: string, transactionId: string): Promise<number | undefined> {
    const row = await db
      .selectFrom('ledger_transactions')
      .select('seq')
      .where('account_id', '=', accountId)
      .where('id', '=', transactionId)
      .executeTakeFirst();
    return row?.seq;
  }

  /**
   * Newest first by insertion order (`seq`), strictly older than `beforeSeq` when given: a keyset page.
   * `service` / `model`: only the transactions whose metadata names exactly that service or model.
   */
  async function listTransactions(
    accountId: string,
    input: { limit: number; beforeSeq?: number; service?: string; model?: string },
  ): Promise<LedgerTransactionRow[]> {
    let query = db.selectFrom('ledger_transactions').selectAll().where('account_id', '=', accountId);
    if (input.beforeSeq !== undefined) query = query.where('seq', '<', input.beforeSeq);
    if (input.service !== undefined) query = query.where(sql<string>`metadata ->> 'service'`, '=', input.service);
    if (input.model !== undefined) query = query.where(sql<string>`metadata ->> 'model'`, '=', input.model);
    return query.orderBy('seq', 'desc').limit(input.limit).execute();
  }

  /**
   * The account's debits with `from <= created_at < until`, summed per group by the database (the
   * ledger_transactions (account_id, created_at) index bounds the scan). Days in order; models and services by
   * what they cost, most first. Tokens come from each debit's usage (none: 0).
   */
  async function sumDebits(
    accountId: string,
    input: { from: Date; until: Date; groupBy: UsageGrouping },
  ): Promise<UsageGroupRow[]> {
    const key = GROUP_KEYS[input.groupBy];
    const query = db
      .selectFrom('ledger_transactions')
      .select([
        key.as('key'),
        sql<number>`sum(amount)::bigint`.as('amount'),
        sql<number>`count(*)`.as('transactions'),
        sql<number>`coalesce(sum((usage ->> 'prompt_tokens')::numeric), 0)::bigint`.as('prompt_tokens'),
        sql<number>`coalesce(sum((usage ->> 'completion_tokens')::numeric), 0)::bigint`.as('completion_tokens'),
      ])
      .where('account_id', '=', accountId)
      .where('type', '=', 'debit')
      .where('created_at', '>=', input.from)
      .where('created_at', '<', input.until)
      .groupBy(key);
    const ordered = input.groupBy === 'day' ? query.orderBy(key) : query.orderBy(sql`sum(amount)`, 'desc').orderBy(key);
    return ordered.execute();
  }

  return { findBalance, findTransactionSeq, listTransactions, sumDebits };
}

export type OrganizationRepository = ReturnType<typeof createOrganizationRepository>;
