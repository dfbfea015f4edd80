import { sql, type Kysely } from 'kysely';

/**
 * Audio: the catalog's audio fields of a model (tts voices and text limit, stt asynchronous), and the
 * asynchronous transcriptions with their uploads. An upload is kept in the database in chunks (written as it
 * arrives, read back as a stream), so any worker of any replica can run the job and a restart loses nothing;
 * it is deleted when its job ends.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('catalog_models').addColumn('audio', 'jsonb').execute();

  await db.schema
    .createTable('transcriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('file_format', 'text', (c) => c.notNull())
    .addColumn('file_bytes', 'integer', (c) => c.notNull())
    .addColumn('options', 'jsonb', (c) => c.notNull())
    .addColumn('callback_url', 'text')
    .addColumn('meta', 'jsonb')
    .addColumn('result', 'jsonb')
    .addColumn('cost', 'double precision')
    .addColumn('error', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('status_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('transcriptions_account_created')
    .on('transcriptions')
    .columns(['account_id', 'created_at'])
    .execute();
  // Uploads abandoned mid-way are found by age.
  await db.schema
    .createIndex('transcriptions_uploading')
    .on('transcriptions')
    .column('created_at')
    .where(sql.ref('status'), '=', 'uploading')
    .execute();

  await db.schema
    .createTable('transcription_chunks')
    .addColumn('transcription_id', 'text', (c) => c.notNull().references('transcriptions.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('data', 'bytea', (c) => c.notNull())
    .addPrimaryKeyConstraint('transcription_chunks_pk', ['transcription_id', 'seq'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('transcription_chunks').execute();
  await db.schema.dropTable('transcriptions').execute();
  await db.schema.alterTable('catalog_models').dropColumn('audio').execute();
}
