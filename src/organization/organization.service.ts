import type { AccountsService, AuthContext } from '../accounts/accounts.service';
import type { ApiKeyRow } from '../accounts/accounts.table';
import { CURRENCY } from '../billing/ledger';
import type { Db } from '../db/database';
import { toPageRequest, type Page } from '../db/keyset-page';
import { invalidRequest, notFound } from '../errors';
import type { LedgerTransactionRow } from '../billing/ledger.table';
import type { ResponseStatus } from '../responses/response-types';
import type { RunStatus } from '../threads/runs.table';
import { toUnixSeconds } from '../time';
import {
  createActivityRepository,
  type ResponseSummaryRow,
  type RunSummaryRow,
  type WebhookOutcomeRow,
} from './activity.repository';
import { createOrganizationRepository, type UsageGroupRow } from './organization.repository';
import { USAGE_DEFAULT_RANGE_SECONDS, USAGE_MAX_RANGE_SECONDS, type UsageGrouping } from './organization.schema';

/** A Response summary's row with its webhook delivery, when there is one. */
export interface ResponseActivity {
  row: ResponseSummaryRow;
  webhook: WebhookOutcomeRow | undefined;
}

/**
 * The account's own view of itself (spec, Account): its money (balance, transactions, usage), its keys, and
 * its recent Responses and Runs, for the account's console.
 */
export function createOrganizationService(deps: { db: Db; accounts: AccountsService }) {
  const repository = createOrganizationRepository(deps.db);
  const activity = createActivityRepository(deps.db);
  const { accounts } = deps;

  async function getBalance(accountId: string): Promise<{ balance: number; available: number }> {
    const balance = await repository.findBalance(accountId);
    // The key was authenticated a moment ago; a missing account means it was deleted in between.
    if (balance === undefined) throw notFound('organization', 'The account no longer exists.');
    return balance;
  }

  /**
   * One page, newest first. `afterId` is the last id of the previous page; it must be a transaction of
   * this account (another account's id is reported exactly like an unknown one).
   */
  async function listTransactions(
    accountId: string,
    input: { limit: number; afterId?: string; service?: string; model?: string },
  ): Promise<LedgerTransactionRow[]> {
    let beforeSeq: number | undefined;
    if (input.afterId !== undefined) {
      beforeSeq = await repository.findTransactionSeq(accountId, input.afterId);
      if (beforeSeq === undefined) {
        throw invalidRequest('organization', `after_id ${input.afterId} is not a transaction of this account.`);
      }
    }
    return repository.listTransactions(accountId, {
      limit: input.limit,
      beforeSeq,
      service: input.service,
      model: input.model,
    });
  }

  /**
   * What the account spent from `from` to `to` (Unix seconds, both included at second resolution: a debit at
   * 12:00:00.7 is within `to` = 12:00:00). Defaults: `to` now, `from` 30 days before `to`. Only debits count;
   * credits are not spending. Every ledger row is written in the ledger's one currency (billing/ledger.ts).
   */
  async function getUsage(accountId: string, query: { from?: number; to?: number; groupBy?: UsageGrouping }) {
    const to = query.to ?? toUnixSeconds(new Date());
    const from = query.from ?? to - USAGE_DEFAULT_RANGE_SECONDS;
    if (from >= to) throw invalidRequest('organization', `from (${from}) must be before to (${to}).`);
    if (to - from > USAGE_MAX_RANGE_SECONDS) {
      throw invalidRequest(
        'organization',
        `The range from ${from} to ${to} is longer than 366 days; ask for at most 366 days at once.`,
      );
    }
    const groupBy = query.groupBy ?? 'day';
    const groups: UsageGroupRow[] = await repository.sumDebits(accountId, {
      from: new Date(from * 1000),
      until: new Date((to + 1) * 1000),
      groupBy,
    });
    return { from, to, groupBy, currency: CURRENCY, groups };
  }

  /** The account's keys, newest first. */
  async function listKeys(accountId: string): Promise<ApiKeyRow[]> {
    return accounts.listKeys(accountId);
  }

  /** A new key of the account; its text is in the reply only. */
  async function createKey(
    accountId: string,
    input: { name?: string; expiresInSeconds?: number },
  ): Promise<{ row: ApiKeyRow; key: string }> {
    return accounts.createKey(accountId, input);
  }

  /**
   * Disables a key of the account (again: no change). The key the request is made with is disabled only with
   * `confirmSelf`: otherwise one click in the console would lock its user out.
   */
  async function disableKey(auth: AuthContext, keyId: string, input: { confirmSelf?: boolean }): Promise<ApiKeyRow> {
    if (keyId === auth.keyId && input.confirmSelf !== true) {
      throw invalidRequest(
        'organization',
        `Key ${keyId} is the key this request is made with: disabling it locks the caller out of the API. Send {"confirm_self": true} to disable it anyway.`,
        'self_disable',
      );
    }
    const row = await accounts.disableAccountKey(auth.accountId, keyId);
    if (!row) throw notFound('organization', `No API key with id ${keyId}.`);
    return row;
  }

  /** Newest first; `after` must name a Response of this account (another account's reads as unknown: 400). */
  async function listResponses(
    accountId: string,
    query: { limit?: number; after?: string; status?: ResponseStatus },
  ): Promise<Page<ResponseActivity>> {
    const page = await toPageRequest({ limit: query.limit, order: 'desc', after: query.after }, async (cursor) => {
      const seq = await activity.findResponseSeq(accountId, cursor);
      if (seq === undefined)
        throw invalidRequest('organization', `after: ${cursor} is not a Response of this account.`);
      return seq;
    });
    const { rows, hasMore } = await activity.listResponses(accountId, page, query.status);
    return { rows: await withWebhooks(accountId, rows), hasMore };
  }

  /** One Response of the account; another account's, or a deleted one, is not found (as GET /v2/responses/{id}). */
  async function getResponse(accountId: string, id: string): Promise<ResponseActivity> {
    const row = await activity.findResponse(accountId, id);
    if (!row) throw notFound('response', `No response with id ${id}.`);
    const [found] = await withWebhooks(accountId, [row]);
    return found;
  }

  async function withWebhooks(accountId: string, rows: ResponseSummaryRow[]): Promise<ResponseActivity[]> {
    const deliveries = await activity.findWebhookOutcomes(
      accountId,
      rows.map((row) => row.id),
    );
    const byResource = new Map(deliveries.map((delivery) => [delivery.resource_id, delivery]));
    return rows.map((row) => ({ row, webhook: byResource.get(row.id) }));
  }

  /** Newest first, across the account's threads; `after` must name a Run of this account. */
  async function listRuns(
    accountId: string,
    query: { limit?: number; after?: string; status?: RunStatus },
  ): Promise<Page<RunSummaryRow>> {
    const page = await toPageRequest({ limit: query.limit, order: 'desc', after: query.after }, async (cursor) => {
      const seq = await activity.findRunSeq(accountId, cursor);
      if (seq === undefined) throw invalidRequest('organization', `after: ${cursor} is not a Run of this account.`);
      return seq;
    });
    return activity.listRuns(accountId, page, query.status);
  }

  return {
    getBalance,
    listTransactions,
    getUsage,
    listKeys,
    createKey,
    disableKey,
    listResponses,
    getResponse,
    listRuns,
  };
}

export type OrganizationService = ReturnType<typeof createOrganizationService>;
