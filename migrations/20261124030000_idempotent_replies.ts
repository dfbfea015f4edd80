import { sql, type Kysely } from 'kysely';

/**
 * Idempotency-Key for the synchronous billable calls (chat completions, embeddings): the stored reply of a
 * (account, scope, key), the request hash it is bound to, and the request id its debit is keyed by, so a retry
 * after a crash bills no second time.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotent_replies')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reply', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('idempotent_replies_pk', ['account_id', 'scope', 'key'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotent_replies').execute();
}
