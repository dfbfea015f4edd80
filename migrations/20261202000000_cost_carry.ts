import { sql, type Kysely } from 'kysely';

/**
 * Billing exact to the kopeck over time (api-decisions 10, third wave). A debit stays whole kopecks, but it is no
 * longer its cost rounded up: `accounts.cost_carry` is the part of a kopeck the account has paid beyond the exact
 * sum of its costs (0 <= carry < 1, exact decimal), and each debit is the cost less that carry, rounded up, the
 * rest carried to the next (now the database function debit_operations, migration 20261207000000). So the sum of an account's debits is always the exact sum of
 * its costs plus the carry: never more by a kopeck or more. `ledger_transactions.cost` is a debit's exact cost
 * (null for credits and for debits written before the carry, which were their cost rounded up). A debit whose cost
 * the carry paid whole is 0 kopecks: it is still written (one debit per billed operation, its record of the cost,
 * and what makes a retried debit a no-op), so the amount check allows 0 for a debit with a cost.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('cost_carry', 'numeric', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`alter table accounts add constraint accounts_cost_carry_range check (cost_carry >= 0 and cost_carry < 1)`.execute(
    db,
  );
  await db.schema.alterTable('ledger_transactions').addColumn('cost', 'numeric').execute();
  await sql`alter table ledger_transactions drop constraint ledger_transactions_amount_check`.execute(db);
  await sql`alter table ledger_transactions add constraint ledger_transactions_amount_check
    check (amount > 0 or (amount = 0 and type = 'debit' and cost > 0))`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from ledger_transactions where amount = 0`.execute(db);
  await sql`alter table ledger_transactions drop constraint ledger_transactions_amount_check`.execute(db);
  await sql`alter table ledger_transactions add constraint ledger_transactions_amount_check check (amount > 0)`.execute(
    db,
  );
  await db.schema.alterTable('ledger_transactions').dropColumn('cost').execute();
  await db.schema.alterTable('accounts').dropConstraint('accounts_cost_carry_range').execute();
  await db.schema.alterTable('accounts').dropColumn('cost_carry').execute();
}
