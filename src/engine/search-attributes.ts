import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { JobLabels, JobRef } from './job-kind';

/**
 * The Temporal search attributes of a job's workflow, so an operator finds a customer's jobs in the Temporal UI
 * (`SwitchyardAccountId = "acct_…" AND ExecutionStatus = "Running"`). Set when the workflow starts; the status is
 * Temporal's own ExecutionStatus (the resource's finer status is the workflow's `status` query and the API's).
 */
export const SEARCH_ATTRIBUTES = {
  accountId: defineSearchAttributeKey('SwitchyardAccountId', SearchAttributeType.KEYWORD),
  kind: defineSearchAttributeKey('SwitchyardKind', SearchAttributeType.KEYWORD),
  model: defineSearchAttributeKey('SwitchyardModel', SearchAttributeType.KEYWORD),
  vendor: defineSearchAttributeKey('SwitchyardVendor', SearchAttributeType.KEYWORD),
  background: defineSearchAttributeKey('SwitchyardBackground', SearchAttributeType.BOOL),
} as const;

/** The attributes and memo a job's workflow starts with. */
export function searchAttributesOf(job: JobRef, labels: JobLabels): { typedSearchAttributes: SearchAttributePair[]; memo: Record<string, unknown> } {
  return {
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.accountId, value: labels.accountId },
      { key: SEARCH_ATTRIBUTES.kind, value: job.kind },
      { key: SEARCH_ATTRIBUTES.model, value: labels.model },
      { key: SEARCH_ATTRIBUTES.vendor, value: labels.vendor },
      { key: SEARCH_ATTRIBUTES.background, value: labels.background },
    ],
    // Shown with the workflow in the UI and `temporal workflow describe`; not searchable.
    memo: { kind: job.kind, resourceId: job.id, accountId: labels.accountId, model: labels.model, vendor: labels.vendor, background: labels.background },
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
