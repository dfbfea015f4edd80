import { sql, type Kysely } from 'kysely';

/**
 * The account's Runs newest first, across its threads (GET /v2/organization/runs): a keyset page by `seq`
 * within the account, as responses (account_id, seq) serves its Responses. Runs were indexed by thread only.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists runs_account_seq_idx on runs (account_id, seq)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists runs_account_seq_idx`.execute(db);
}
