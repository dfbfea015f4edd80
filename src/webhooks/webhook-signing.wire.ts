import { toUnixSeconds } from '../time';
import type { WebhookSigningState } from './webhook-signing.service';

const seconds = (date: Date | null) => (date ? toUnixSeconds(date) : null);

/** The account's webhook signing as the API shows it; `secret` only in the reply that made it (enable, rotate). */
export function webhookSigningToWire(state: WebhookSigningState) {
  return {
    object: 'organization.webhook_signing' as const,
    enabled: state.enabled,
    /** The Standard Webhooks version of the signatures (`v1,` in `webhook-signature`). */
    scheme: 'standard-webhooks-v1' as const,
    secret_created_at: seconds(state.secretCreatedAt),
    previous_secret_expires_at: seconds(state.previousExpiresAt),
  };
}
