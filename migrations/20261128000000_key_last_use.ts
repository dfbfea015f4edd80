import { sql, type Kysely } from 'kysely';

/**
 * When each API key was last used (written at most once a minute per key and process, so authentication stays
 * a read), and the operators' account list: newest first, by name.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('last_used_at', 'timestamptz').execute();
  await sql`create index if not exists accounts_created_idx on accounts (created_at desc, id desc)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists accounts_created_idx`.execute(db);
  await db.schema.alterTable('api_keys').dropColumn('last_used_at').execute();
}
