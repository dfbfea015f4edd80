import { sql, type Kysely } from 'kysely';

/**
 * Event streams are keyed by stream id, not by Response: a Run or a transcription streams through the same
 * table. The foreign key to `responses` goes (a stream id may name any resource that streams); Responses are
 * only ever soft-deleted and accounts are never deleted, so the cascade it gave was never taken.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table response_events drop constraint response_events_response_id_fkey`.execute(db);
  await sql`alter table response_events rename column response_id to stream_id`.execute(db);
  await sql`alter table response_events rename constraint response_events_pk to stream_events_pk`.execute(db);
  await sql`alter table response_events rename to stream_events`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table stream_events rename to response_events`.execute(db);
  await sql`alter table response_events rename constraint stream_events_pk to response_events_pk`.execute(db);
  await sql`alter table response_events rename column stream_id to response_id`.execute(db);
  // Streams of other resources cannot stay under a key that names Responses.
  await sql`delete from response_events where response_id not in (select id from responses)`.execute(db);
  await sql`
    alter table response_events add constraint response_events_response_id_fkey
    foreign key (response_id) references responses (id) on delete cascade`.execute(db);
}
