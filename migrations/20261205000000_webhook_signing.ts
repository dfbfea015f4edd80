import { sql, type Kysely } from 'kysely';

/**
 * Opt-in Standard Webhooks signing (api-decisions 33): one row per account that turned it on. `secret` is the
 * current signing secret sealed with AES-256-GCM under a key outside the database (src/webhooks/webhook-signing.ts);
 * `previous_secret` the one a rotation replaced, kept signing beside it until `previous_expires_at` when the rotation
 * asked for an overlap. No row: the account's webhooks are unsigned, as the spec has them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;
  await db.schema
    .createTable('webhook_signing_secrets')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('secret_created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('previous_secret', 'text')
    .addColumn('previous_expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_signing_secrets').execute();
}
