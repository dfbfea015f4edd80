import type { Selectable } from 'kysely';
import type { Db } from '../db/database';
import { runPage, type Page, type PageRequest } from '../db/keyset-page';
import type { ResponseStatus } from '../responses/response-types';
import type { ResponseRow } from '../responses/responses.table';
import type { RunRow, RunStatus } from '../threads/runs.table';
import type { WebhookDeliveriesTable } from '../webhooks/webhooks.table';

/**
 * The account's Responses and Runs as its console lists them: only the columns a summary shows, never the
 * request, output or transcript (each may be megabytes, and a page holds a hundred).
 */
const RESPONSE_SUMMARY_COLUMNS = [
  'id',
  'status',
  'model',
  'vendor',
  'background',
  'conversation_id',
  'created_at',
  'started_at',
  'completed_at',
  'usage',
  'error',
] as const;
const RUN_SUMMARY_COLUMNS = [
  'id',
  'thread_id',
  'assistant_id',
  'status',
  'model',
  'created_at',
  'completed_at',
  'failed_at',
  'cancelled_at',
  'usage',
  'last_error',
] as const;

export type ResponseSummaryRow = Pick<ResponseRow, (typeof RESPONSE_SUMMARY_COLUMNS)[number]>;
export type RunSummaryRow = Pick<RunRow, (typeof RUN_SUMMARY_COLUMNS)[number]>;
export type WebhookOutcomeRow = Pick<
  Selectable<WebhookDeliveriesTable>,
  'resource_id' | 'status' | 'response_status' | 'error' | 'attempted_at'
>;

export function createActivityRepository(db: Db) {
  /** `seq` of a Response of the account, deleted or not: a page cursor stays usable when its Response is deleted. */
  async function findResponseSeq(accountId: string, id: string): Promise<number | undefined> {
    const row = await db
      .selectFrom('responses')
      .select('seq')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.seq;
  }

  /** A page of the account's Responses that are not deleted, by `seq` (the responses (account_id, seq) index). */
  async function listResponses(
    accountId: string,
    page: PageRequest,
    status?: ResponseStatus,
  ): Promise<Page<ResponseSummaryRow>> {
    let query = db
      .selectFrom('responses')
      .select(RESPONSE_SUMMARY_COLUMNS)
      .where('account_id', '=', accountId)
      .where('deleted_at', 'is', null);
    if (status !== undefined) query = query.where('status', '=', status);
    return runPage(query, page);
  }

  async function findResponse(accountId: string, id: string): Promise<ResponseSummaryRow | undefined> {
    return db
      .selectFrom('responses')
      .select(RESPONSE_SUMMARY_COLUMNS)
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
  }

  async function findRunSeq(accountId: string, id: string): Promise<number | undefined> {
    const row = await db
      .selectFrom('runs')
      .select('seq')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.seq;
  }

  /** A page of the account's Runs, by `seq` (the runs (account_id, seq) index, migrations/20261129000000). */
  async function listRuns(accountId: string, page: PageRequest, status?: RunStatus): Promise<Page<RunSummaryRow>> {
    let query = db.selectFrom('runs').select(RUN_SUMMARY_COLUMNS).where('account_id', '=', accountId);
    if (status !== undefined) query = query.where('status', '=', status);
    return runPage(query, page);
  }

  /** The webhook deliveries of these resources (at most one each: resource_id is unique), of the account's own. */
  async function findWebhookOutcomes(accountId: string, resourceIds: string[]): Promise<WebhookOutcomeRow[]> {
    if (resourceIds.length === 0) return [];
    return db
      .selectFrom('webhook_deliveries')
      .select(['resource_id', 'status', 'response_status', 'error', 'attempted_at'])
      .where('resource_id', 'in', resourceIds)
      .where('account_id', '=', accountId)
      .execute();
  }

  return { findResponseSeq, listResponses, findResponse, findRunSeq, listRuns, findWebhookOutcomes };
}

export type ActivityRepository = ReturnType<typeof createActivityRepository>;
