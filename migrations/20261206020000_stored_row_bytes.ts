import { sql, type Kysely } from 'kysely';

/**
 * The size of a conversation item's and a thread message's stored text, computed once when the row is written
 * (a stored generated column). A page of items or messages stops at 4 MiB of it (src/db/keyset-page.ts) and reads
 * the sizes of up to a hundred rows first: computed at read time, that turned each row's jsonb back into text,
 * megabytes per page asked for, which on PGlite runs in the service's own thread (a crowd asking for pages of large
 * items made turns of seconds in which nothing else was served).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table conversation_items add column stored_bytes integer not null generated always as (
    coalesce(octet_length(content::text), 0) + coalesce(octet_length(arguments), 0) + coalesce(octet_length(output), 0)
  ) stored`.execute(db);
  await sql`alter table thread_messages add column stored_bytes integer not null generated always as (
    octet_length(content::text)
  ) stored`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('thread_messages').dropColumn('stored_bytes').execute();
  await db.schema.alterTable('conversation_items').dropColumn('stored_bytes').execute();
}
