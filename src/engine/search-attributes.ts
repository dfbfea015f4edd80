import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { JobLabels, JobRef } from './job-kind';

/**
 * The Temporal search attributes of a job's workflow, so an operator finds a customer's jobs in the Temporal UI
 * (`SwitchyardAccountId = "acct_…" AND SwitchyardStatus = "in_progress"`). Set when the workflow starts;
 * `SwitchyardStatus` is the resource's own status (queued, in_progress, requires_action, …, completed, failed),
 * kept up to date by the workflow (workflows/temporal-context.ts), finer than Temporal's ExecutionStatus (a
 * Response that failed is a workflow that completed).
 */
export const SEARCH_ATTRIBUTES = {
  accountId: defineSearchAttributeKey('SwitchyardAccountId', SearchAttributeType.KEYWORD),
  kind: defineSearchAttributeKey('SwitchyardKind', SearchAttributeType.KEYWORD),
  model: defineSearchAttributeKey('SwitchyardModel', SearchAttributeType.KEYWORD),
  vendor: defineSearchAttributeKey('SwitchyardVendor', SearchAttributeType.KEYWORD),
  background: defineSearchAttributeKey('SwitchyardBackground', SearchAttributeType.BOOL),
  status: defineSearchAttributeKey('SwitchyardStatus', SearchAttributeType.KEYWORD),
} as const;

/** The attributes and memo a job's workflow starts with. */
export function searchAttributesOf(
  job: JobRef,
  labels: JobLabels,
): { typedSearchAttributes: SearchAttributePair[]; memo: Record<string, unknown> } {
  return {
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.accountId, value: labels.accountId },
      { key: SEARCH_ATTRIBUTES.kind, value: job.kind },
      { key: SEARCH_ATTRIBUTES.model, value: labels.model },
      { key: SEARCH_ATTRIBUTES.vendor, value: labels.vendor },
      { key: SEARCH_ATTRIBUTES.background, value: labels.background },
      { key: SEARCH_ATTRIBUTES.status, value: labels.status },
    ],
    // Shown with the workflow in the UI and `temporal workflow describe`; not searchable.
    memo: {
      kind: job.kind,
      resourceId: job.id,
      accountId: labels.accountId,
      model: labels.model,
      vendor: labels.vendor,
      background: labels.background,
    },
  };
}

/**
 * The attributes a namespace lacks, by name with their Temporal type: what `temporal operator search-attribute
 * create` (or the engine at start) registers. `existing` is the namespace's custom attributes by name.
 */
export function missingSearchAttributes(existing: Record<string, unknown>): Record<string, 'KEYWORD' | 'BOOL'> {
  const missing: Record<string, 'KEYWORD' | 'BOOL'> = {};
  for (const key of Object.values(SEARCH_ATTRIBUTES)) {
    if (!(key.name in existing)) missing[key.name] = key.type as 'KEYWORD' | 'BOOL';
  }
  return missing;
}
