import { type Kysely } from 'kysely';

/**
 * An operator can suspend an account (issue 34): `accounts.suspended_at` is when (null: active). While it is set, the
 * account's keys answer 403 (accounts.service.ts, authenticate); its data, balance and keys are kept as they are, so
 * reactivating it restores everything.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('suspended_at', 'timestamptz').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').dropColumn('suspended_at').execute();
}
