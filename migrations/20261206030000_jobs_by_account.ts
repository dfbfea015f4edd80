import { sql, type Kysely } from 'kysely';

/**
 * The account a job works for (api-decisions 34): the embedded engine claims jobs by account in turn and caps one
 * account's running jobs, so one account's flood does not starve another's. Jobs written before this have none and
 * are claimed as one account of their own.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('account_id', 'text').execute();
  await sql`create index jobs_claimable_by_account_idx on jobs (account_id, created_at) where status in ('pending', 'running')`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index jobs_claimable_by_account_idx`.execute(db);
  await db.schema.alterTable('jobs').dropColumn('account_id').execute();
}
