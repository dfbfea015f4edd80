import type { ColumnType } from 'kysely';
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

/**
 * Standard Webhooks signing of one account (api-decisions 33); no row: unsigned. Secrets are sealed
 * (webhook-signing.ts, SecretBox), never stored as they are given to the account.
 */
export interface WebhookSigningSecretsTable {
  account_id: string;
  secret: string;
  secret_created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  /** The secret a rotation replaced, signing beside the current one until previous_expires_at. */
  previous_secret: string | null;
  previous_expires_at: NullableTimestamp;
  created_at: CreatedAt;
}
