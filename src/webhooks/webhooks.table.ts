import type { CreatedAt, Json, NullableTimestamp } from '../db/columns';

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed' | 'refused';

/** One row per resource: the unique resource_id makes the one-shot webhook at-most-once across retries. */
export interface WebhookDeliveriesTable {
  id: string;
  resource_id: string;
  account_id: string;
  url: string;
  payload: Json<Record<string, unknown>>;
  status: WebhookDeliveryStatus;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
  created_at: CreatedAt;
  attempted_at: NullableTimestamp;
}
