import { sql, type Kysely } from 'kysely';

/**
 * Billing holds (docs/architecture.md, "Money: holds"): `ledger_holds` has one row per billable operation in flight, for the
 * most it can still cost; `accounts.held` is their sum, kept in the same statements, so the available balance
 * (`balance - held`) is one row read and admission can check and hold under that row's lock. `job_id` names
 * the durable job that settles the hold (null for an operation within one request); `owner` the process
 * that placed it, so the holds of a process that died are released by the sweep (ledger.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('held', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('ledger_holds')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('operation_key', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('job_id', 'text')
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('ledger_holds_pkey', ['account_id', 'operation_key'])
    .execute();
  await db.schema.createIndex('ledger_holds_owner_idx').on('ledger_holds').column('owner').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('ledger_holds').execute();
  await db.schema.alterTable('accounts').dropColumn('held').execute();
}
