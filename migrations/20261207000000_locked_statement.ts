import { sql, type Kysely } from 'kysely';

/**
 * `with_accounts_locked(account_ids, statement, arg, shape)`: locks the accounts (in id order, `for no key update`)
 * and then runs `statement` (one parameter, `$1`, given `arg`), answering its rows as `shape`'s row type
 * (`null::ledger_transactions`, say). One round trip and, outside a transaction, one commit, where the same two
 * statements from the client were four (`begin`, the lock, the statement, `commit`).
 *
 * Why the lock is a statement of its own: a debit prices its cost with the account's carry, and a statement that
 * locked and read the carry itself priced with a version older than the one it updated under concurrent debits of
 * one account (the carry's check failed; billing/ledger.ts, lockAccounts). In a volatile PL/pgSQL function each
 * statement takes its own snapshot, as each statement of a read-committed transaction does, so the statement here
 * starts after the lock is held and reads every locked row as it is, exactly like the two statements it replaces.
 *
 * `response_finalization` is the row a Response's finalisation answers (responses.repository.ts, writeFinalizations).
 *
 * `statement` is always one of the application's own constant statements (never text from a request); the
 * function runs with its caller's rights (security invoker), so it allows nothing the caller could not run.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function with_accounts_locked(account_ids text[], statement text, arg jsonb, shape anyelement)
    returns setof anyelement
    language plpgsql volatile as $$
    begin
      perform 1 from accounts where id = any(account_ids) order by id for no key update;
      return query execute statement using arg;
    end
    $$`.execute(db);
  await sql`create type response_finalization as (id text, sequence integer, debited bigint)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop type response_finalization`.execute(db);
  await sql`drop function with_accounts_locked(text[], text, jsonb, anyelement)`.execute(db);
}
