import { sql, type Kysely } from 'kysely';

/**
 * One Idempotency-Key table for every endpoint (src/idempotency/idempotency.ts). Responses kept their keys in
 * `idempotency_keys` (account, key → response id) and the synchronous calls theirs in `idempotent_replies`
 * (account, scope, key → stored reply). They become one table, `idempotency_keys`, keyed by (account, scope, key): a
 * call whose reply is stored keeps it in `reply`; a creation (a Response, a Run, an asynchronous transcription)
 * keeps the id of what it created in `resource_id`, written in the creation's own transaction. Live Response keys
 * move over under the scope `responses`, so a retry after the upgrade still finds its Response.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('idempotent_replies').addColumn('resource_id', 'text').execute();
  await sql`
    insert into idempotent_replies (account_id, scope, key, request_hash, request_id, status, resource_id, created_at)
    select account_id, 'responses', key, request_hash, response_id, 'completed', response_id, created_at
    from idempotency_keys`.execute(db);
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable('idempotent_replies').renameTo('idempotency_keys').execute();
  await sql`alter table idempotency_keys rename constraint idempotent_replies_pk to idempotency_keys_pk`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table idempotency_keys rename constraint idempotency_keys_pk to idempotent_replies_pk`.execute(db);
  await db.schema.alterTable('idempotency_keys').renameTo('idempotent_replies').execute();
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('response_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'key'])
    .execute();
  await sql`
    insert into idempotency_keys (account_id, key, request_hash, response_id, created_at)
    select account_id, key, request_hash, resource_id, created_at from idempotent_replies where scope = 'responses'`.execute(
    db,
  );
  await sql`delete from idempotent_replies where resource_id is not null`.execute(db);
  await db.schema.alterTable('idempotent_replies').dropColumn('resource_id').execute();
}
