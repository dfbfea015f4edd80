import { sql, type Kysely } from 'kysely';

// Frozen: never edit a released migration; add a new one instead.
/**
 * The legacy Threads family: threads and their messages (Runs come in their own migration). Messages go with
 * their thread through ON DELETE CASCADE; `assistant_id` and `run_id` name the Run that appended a message and
 * keep no foreign key, so a message outlives the Assistant or Run that wrote it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  await db.schema
    .createTable('threads')
    .addColumn('seq', 'bigserial', (c) => c.notNull().unique())
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('tool_resources', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('threads_account_seq_idx').on('threads').columns(['account_id', 'seq']).execute();

  await db.schema
    .createTable('thread_messages')
    .addColumn('seq', 'bigserial', (c) => c.notNull().unique())
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('thread_id', 'text', (c) => c.notNull().references('threads.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('completed'))
    .addColumn('content', 'jsonb', (c) => c.notNull())
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('assistant_id', 'integer')
    .addColumn('run_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('thread_messages_thread_seq_idx')
    .on('thread_messages')
    .columns(['thread_id', 'seq'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['thread_messages', 'threads']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
