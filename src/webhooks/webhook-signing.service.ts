import { sql } from 'kysely';
import type { Db } from '../db/database';
import { invalidRequest } from '../errors';
import { formatSecret, newSigningSecret, type SecretBox } from './webhook-signing';

/** Whether an account signs its webhooks, and since when; never the secret. */
export interface WebhookSigningState {
  enabled: boolean;
  secretCreatedAt: Date | null;
  /** A rotation's previous secret still signs beside the current one until then; null: only the current one. */
  previousExpiresAt: Date | null;
}

/** The longest a rotation keeps the previous secret signing: a day (as Svix does). */
export const MAX_KEEP_PREVIOUS_SECONDS = 24 * 3600;

/**
 * An account's Standard Webhooks signing (api-decisions 33): off until the account turns it on; the secret is made
 * here, answered once (enable, rotate) and stored sealed (SecretBox), so nothing answers it again, and no log line
 * carries it. The webhook sender asks `secretsFor` at each POST, so a rotation or a disable applies to the very next
 * webhook on every replica.
 */
export interface WebhookSigningService {
  status(accountId: string): Promise<WebhookSigningState>;
  /** Turns signing on with a new secret, answered this once. 400 when it is on already (rotate instead). */
  enable(accountId: string): Promise<{ state: WebhookSigningState; secret: string }>;
  /**
   * A new secret, answered this once. The replaced one stops signing at once (a leaked secret), or, with
   * `keepPreviousSeconds`, signs beside the new one for that long (a receiver being switched over).
   */
  rotate(
    accountId: string,
    options: { keepPreviousSeconds: number },
  ): Promise<{ state: WebhookSigningState; secret: string }>;
  /** Back to unsigned webhooks; the secrets are deleted. Answers the state (off) whether it was on or not. */
  disable(accountId: string): Promise<WebhookSigningState>;
  /**
   * The secrets that sign the account's webhooks now, the current one first; undefined when signing is off. Throws
   * SecretUnreadableError when a stored secret does not open with this process's key.
   */
  secretsFor(accountId: string): Promise<Buffer[] | undefined>;
}

const OFF: WebhookSigningState = { enabled: false, secretCreatedAt: null, previousExpiresAt: null };

export function createWebhookSigningService(deps: { db: Db; box: SecretBox }): WebhookSigningService {
  const { db, box } = deps;
  /** An expired previous secret reads as none (it is cleared by the next rotation, never used after its time). */
  const previousStillValid = sql<boolean>`coalesce(previous_expires_at > now(), false)`;

  const stateOf = (row: {
    secret_created_at: Date;
    previous_expires_at: Date | null;
    previous_valid: boolean;
  }): WebhookSigningState => ({
    enabled: true,
    secretCreatedAt: row.secret_created_at,
    previousExpiresAt: row.previous_valid ? row.previous_expires_at : null,
  });

  return {
    async status(accountId) {
      const row = await db
        .selectFrom('webhook_signing_secrets')
        .select(['secret_created_at', 'previous_expires_at', previousStillValid.as('previous_valid')])
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      return row ? stateOf(row) : OFF;
    },

    async enable(accountId) {
      const secret = newSigningSecret();
      const row = await db
        .insertInto('webhook_signing_secrets')
        .values({ account_id: accountId, secret: box.seal(secret, accountId) })
        .onConflict((conflict) => conflict.column('account_id').doNothing())
        .returning(['secret_created_at', 'previous_expires_at', previousStillValid.as('previous_valid')])
        .executeTakeFirst();
      if (!row) {
        throw invalidRequest(
          'organization',
          'Webhook signing is already on for this account; its secret is shown only when it is made. To get a new one, ' +
            'rotate it: POST /v2/organization/webhook-signing/rotate.',
          'webhook_signing_enabled',
        );
      }
      return { state: stateOf(row), secret: formatSecret(secret) };
    },

    async rotate(accountId, { keepPreviousSeconds }) {
      const secret = newSigningSecret();
      const keep = keepPreviousSeconds > 0;
      const row = await db
        .updateTable('webhook_signing_secrets')
        .set({
          // The right-hand sides read the row as it was: the secret being replaced.
          previous_secret: keep ? sql<string>`secret` : null,
          previous_expires_at: keep
            ? sql<Date>`now() + ${sql.lit(Math.floor(keepPreviousSeconds))} * interval '1 second'`
            : null,
          secret: box.seal(secret, accountId),
          secret_created_at: sql<Date>`now()`,
        })
        .where('account_id', '=', accountId)
        .returning(['secret_created_at', 'previous_expires_at', sql<boolean>`${sql.lit(keep)}`.as('previous_valid')])
        .executeTakeFirst();
      if (!row) {
        throw invalidRequest(
          'organization',
          'Webhook signing is off for this account: turn it on first (POST /v2/organization/webhook-signing).',
          'webhook_signing_disabled',
        );
      }
      return { state: stateOf(row), secret: formatSecret(secret) };
    },

    async disable(accountId) {
      await db.deleteFrom('webhook_signing_secrets').where('account_id', '=', accountId).execute();
      return OFF;
    },

    async secretsFor(accountId) {
      const row = await db
        .selectFrom('webhook_signing_secrets')
        .select(['secret', 'previous_secret', previousStillValid.as('previous_valid')])
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (!row) return undefined;
      const secrets = [box.open(row.secret, accountId)];
      if (row.previous_secret && row.previous_valid) secrets.push(box.open(row.previous_secret, accountId));
      return secrets;
    },
  };
}
