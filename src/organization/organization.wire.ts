import { keyToWire } from '../accounts/accounts.wire';
import type { ApiKeyRow } from '../accounts/accounts.table';
import { toUnixSeconds } from '../time';
import type { ResponseSummaryRow, RunSummaryRow, WebhookOutcomeRow } from './activity.repository';
import type { UsageGroupRow } from './organization.repository';
import type { UsageGrouping } from './organization.schema';

const seconds = (date: Date | null) => (date ? toUnixSeconds(date) : null);
const millisecondsBetween = (start: Date, end: Date | null) => (end ? end.getTime() - start.getTime() : null);

/** A key of the account as its console shows it: `current` marks the key the request was made with. */
export function accountKeyToWire(row: ApiKeyRow, currentKeyId: string | null) {
  return { ...keyToWire(row), current: row.id === currentKeyId };
}

/** A Response as the account's activity list shows it: what happened and what it cost, without its content. */
export function responseSummaryToWire(row: ResponseSummaryRow, webhook: WebhookOutcomeRow | undefined) {
  return {
    id: row.id,
    object: 'response.summary' as const,
    status: row.status,
    model: row.model,
    vendor: row.vendor,
    background: row.background,
    conversation_id: row.conversation_id,
    created_at: toUnixSeconds(row.created_at),
    started_at: seconds(row.started_at),
    completed_at: seconds(row.completed_at),
    // From the stored times (milliseconds), not the rounded seconds above.
    duration_ms: millisecondsBetween(row.created_at, row.completed_at),
    usage: row.usage
      ? {
          input_tokens: row.usage.input_tokens,
          output_tokens: row.usage.output_tokens,
          total_tokens: row.usage.total_tokens,
          cost: row.usage.cost,
        }
      : null,
    error: row.error ? { code: row.error.code, message: row.error.message } : null,
    // The one-shot webhook's outcome (webhooks/webhook-sender.ts); null when none was asked for or it is not sent yet.
    webhook: webhook
      ? {
          status: webhook.status,
          response_status: webhook.response_status,
          error: webhook.error,
          attempted_at: seconds(webhook.attempted_at),
        }
      : null,
  };
}

/**
 * A Run as the account's activity list shows it. `completed_at` is when it ended, however it ended: the runs
 * table stamps completed and incomplete Runs in completed_at, failed and expired ones in failed_at, cancelled
 * ones in cancelled_at (threads/runs.repository.ts).
 */
export function runSummaryToWire(row: RunSummaryRow) {
  const endedAt = row.completed_at ?? row.failed_at ?? row.cancelled_at;
  return {
    id: row.id,
    object: 'thread.run.summary' as const,
    thread_id: row.thread_id,
    assistant_id: row.assistant_id,
    status: row.status,
    model: row.model,
    created_at: toUnixSeconds(row.created_at),
    completed_at: seconds(endedAt),
    duration_ms: millisecondsBetween(row.created_at, endedAt),
    usage: row.usage
      ? {
          prompt_tokens: row.usage.prompt_tokens,
          completion_tokens: row.usage.completion_tokens,
          total_tokens: row.usage.total_tokens,
          cost: row.usage.cost,
        }
      : null,
    last_error: row.last_error ? { code: row.last_error.code, message: row.last_error.message } : null,
  };
}

/** GET /v2/organization/usage: the groups, and their sum. */
export function usageToWire(input: {
  from: number;
  to: number;
  groupBy: UsageGrouping;
  currency: string;
  groups: UsageGroupRow[];
}) {
  const data = input.groups.map((group) => ({
    key: group.key,
    amount: group.amount,
    transactions: group.transactions,
    prompt_tokens: group.prompt_tokens,
    completion_tokens: group.completion_tokens,
  }));
  const total = { amount: 0, transactions: 0, prompt_tokens: 0, completion_tokens: 0 };
  for (const group of data) {
    total.amount += group.amount;
    total.transactions += group.transactions;
    total.prompt_tokens += group.prompt_tokens;
    total.completion_tokens += group.completion_tokens;
  }
  return {
    object: 'organization.usage' as const,
    from: input.from,
    to: input.to,
    group_by: input.groupBy,
    currency: input.currency,
    data,
    total,
  };
}

export type ResponseSummaryWire = ReturnType<typeof responseSummaryToWire>;
export type RunSummaryWire = ReturnType<typeof runSummaryToWire>;
export type AccountKeyWire = ReturnType<typeof accountKeyToWire>;
export type UsageWire = ReturnType<typeof usageToWire>;
