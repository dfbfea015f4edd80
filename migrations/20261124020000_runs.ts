import { sql, type Kysely } from 'kysely';

/**
 * Runs of the legacy Threads family, one durable job each; and what the engines need to let a job wait for a
 * signal (a Run in requires_action) without holding a slot: suspension and wake counts on `jobs`.
 * A Run keeps no foreign key to its thread: deleting a thread cancels its active Run, whose job still has to
 * finish and bill what the vendor reported.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;
  await db.schema
    .createTable('runs')
    .addColumn('seq', 'bigserial', (c) => c.notNull().unique())
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('thread_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('assistant_id', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('vendor', 'text', (c) => c.notNull())
    .addColumn('instructions', 'text')
    .addColumn('request', 'jsonb', (c) => c.notNull())
    .addColumn('transcript', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('rounds', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('required_action', 'jsonb')
    .addColumn('usage', 'jsonb')
    .addColumn('last_error', 'jsonb')
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('started_at', 'timestamptz')
    .addColumn('completed_at', 'timestamptz')
    .addColumn('cancelled_at', 'timestamptz')
    .addColumn('failed_at', 'timestamptz')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('cancel_requested_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('runs_thread_seq_idx').on('runs').columns(['thread_id', 'seq']).execute();
  // One active Run per thread, kept by the database whatever the races between creations.
  await sql`create unique index runs_one_active_per_thread on runs (thread_id) where status in ('queued', 'in_progress', 'requires_action', 'cancelling')`.execute(
    db,
  );

  await db.schema
    .alterTable('jobs')
    .addColumn('suspensions', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('jobs')
    .addColumn('wakes', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  // Code before this migration knows no job kind but `response`.
  await sql`delete from jobs where kind = 'run'`.execute(db);
  await db.schema.alterTable('jobs').dropColumn('wakes').execute();
  await db.schema.alterTable('jobs').dropColumn('suspensions').execute();
  await db.schema.dropTable('runs').execute();
}
