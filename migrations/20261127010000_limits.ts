import { sql, type Kysely } from 'kysely';

/**
 * Per-account limits (api-decisions 26), set by operators; null is the configured default. `request_windows`
 * counts the requests of each account with a requests-per-minute limit in fixed one-minute windows, in the
 * database, so that every replica counts against the same figure.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('requests_per_minute', 'integer')
    .addColumn('tokens_per_minute', 'integer')
    .addColumn('concurrent_jobs', 'integer')
    .execute();
  await db.schema
    .createTable('request_windows')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('window_start', 'timestamptz', (c) => c.notNull())
    .addColumn('requests', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('request_windows_pkey', ['account_id', 'window_start'])
    .execute();
  // Counting recent debits' tokens (tokens per minute) reads an account's newest ledger rows.
  await sql`create index if not exists ledger_transactions_account_created_idx on ledger_transactions (account_id, created_at)`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists ledger_transactions_account_created_idx`.execute(db);
  await db.schema.dropTable('request_windows').execute();
  await db.schema
    .alterTable('accounts')
    .dropColumn('requests_per_minute')
    .dropColumn('tokens_per_minute')
    .dropColumn('concurrent_jobs')
    .execute();
}
