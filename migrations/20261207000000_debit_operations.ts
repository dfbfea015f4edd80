import { sql, type Kysely } from 'kysely';

/**
 * `debit_operations(debits)`: the whole of a settlement, the one place that writes debits. `debits` is a JSON array
 * of ledger rows to write (billing/ledger.ts, debitRow: `id`, `account_id`, `cost` an exact decimal of kopecks,
 * `currency`, `metadata` and `usage` as JSON text, `operation_key`), costs possibly 0; it answers the ledger rows it
 * wrote. It was a fragment of SQL that each caller put in its own statement after locking the accounts in a
 * statement of its own (`begin`, the lock, the debit, `commit`: four round trips, the account rows locked across
 * them). Now a chat completion's debit is one statement, and a Response's finalisation calls it from its own.
 *
 * For each row the operation's hold, if any, is released, and its debit becomes a ledger row that comes off its
 * account's balance, except an operation already billed, which writes and charges nothing (nor carries).
 *
 * Exact to the kopeck over time (api-decisions 10): `accounts.cost_carry` (0 <= carry < 1) is what the account has
 * paid beyond the exact sum of its costs. Each debit is whole kopecks, its cost less the carry rounded up, and the
 * carry becomes what that paid beyond the cost; for the rows of one account in order (operation key), the first
 * k debits together are `ceil(C_k - carry)` with C_k the sum of their costs. So the debits of an account always
 * come to the exact sum of its costs plus the carry, less than a kopeck more, over any period; a debit never
 * exceeds its cost rounded up (what its hold holds). A check keeps the carry in [0, 1). A cost the carry covers
 * whole is a debit of 0 kopecks, still written: it records the cost, and a retry finds it.
 *
 * The balance never goes below what the account's other holds need (so never below zero): what a hold covers is
 * charged; a cost beyond its hold (a vendor counted more than the bound held for; a debit with no hold) is charged
 * as far as the rest of the balance, read under the account row's lock, allows, in the order of the rows, and what
 * it could not charge is noted in the debit's metadata as `uncollected` (whole kopecks; the carry is kept as if it
 * had been paid). The one place `balance = credits - debits` is kept for debits, and `held = the sum of open holds`
 * for their release. The metadata of each debit records its exact `cost` and the account's `carry` after it.
 *
 * The accounts are locked (in id order, `for no key update`) by a statement of their own before the statement that
 * prices with their carry: in a volatile function each statement takes its own snapshot, so that statement reads
 * every locked row as it is. Locked and priced in one statement, Postgres under concurrent debits of one account
 * priced a third of them with an older carry than the row it updated (the carry's check failed them; 764 of 2,400
 * concurrent debits in a probe). Static SQL in PL/pgSQL: each connection plans it once.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function debit_operations(debits jsonb)
    returns setof ledger_transactions
    language plpgsql volatile as $$
    begin
      perform 1 from accounts
      where id in (select distinct x.account_id from jsonb_to_recordset(debits) as x (account_id text))
      order by id
      for no key update;
      return query
      with billable as (
        select * from jsonb_to_recordset(debits) as billable (
          id text, account_id text, cost numeric, currency text, metadata text, usage text, operation_key text)),
      released as (
        delete from ledger_holds using billable
        where ledger_holds.account_id = billable.account_id and ledger_holds.operation_key = billable.operation_key
        returning ledger_holds.account_id, ledger_holds.operation_key, ledger_holds.amount),
      locked as (
        select id, balance, held, cost_carry from accounts where id in (select account_id from billable)),
      fresh as (
        select distinct on (b.account_id, b.operation_key) b.* from billable as b
        where b.cost > 0
          and not exists (select 1 from ledger_transactions as t where t.account_id = b.account_id and t.operation_key = b.operation_key)
        order by b.account_id, b.operation_key),
      priced as (
        select fresh.*,
          ceil(sum(fresh.cost) over upto - locked.cost_carry) - ceil(coalesce(sum(fresh.cost) over before, 0) - locked.cost_carry) as amount,
          locked.cost_carry + ceil(sum(fresh.cost) over upto - locked.cost_carry) - sum(fresh.cost) over upto as carry
        from fresh join locked on locked.id = fresh.account_id
        window upto as (partition by fresh.account_id order by fresh.operation_key rows between unbounded preceding and current row),
          before as (partition by fresh.account_id order by fresh.operation_key rows between unbounded preceding and 1 preceding)),
      covered as (
        select b.*, least(b.amount, coalesce(r.amount, 0)) as covered
        from priced as b left join released as r on r.account_id = b.account_id and r.operation_key = b.operation_key),
      spare as (
        select locked.id as account_id,
          locked.balance - coalesce((select sum(covered.covered) from covered where covered.account_id = locked.id), 0)
            - (locked.held - coalesce((select sum(released.amount) from released where released.account_id = locked.id), 0)) as amount
        from locked),
      allocated as (
        select covered.*, covered.covered + least(covered.amount - covered.covered, greatest(0, spare.amount - coalesce(sum(covered.amount - covered.covered)
            over (partition by covered.account_id order by covered.operation_key rows between unbounded preceding and 1 preceding), 0))) as charged
        from covered join spare on spare.account_id = covered.account_id),
      debit as (
        insert into ledger_transactions (id, account_id, type, amount, currency, metadata, usage, operation_key, cost)
        select id, account_id, 'debit', charged, currency,
          metadata::jsonb || jsonb_build_object('cost', cost, 'carry', carry)
            || case when charged < amount then jsonb_build_object('uncollected', amount - charged) else '{}'::jsonb end,
          usage::jsonb, operation_key, cost
        from allocated
        order by account_id, operation_key
        on conflict (account_id, operation_key) do nothing
        returning *),
      charged as (
        update accounts set balance = accounts.balance - totals.debited, held = accounts.held - totals.released,
          cost_carry = accounts.cost_carry + totals.priced - totals.cost
        from (
          select account_id, sum(debited) as debited, sum(released) as released, sum(priced) as priced, sum(cost) as cost from (
            select debit.account_id, debit.amount as debited, 0::bigint as released, allocated.amount as priced, allocated.cost
            from debit join allocated on allocated.id = debit.id
            union all
            select account_id, 0::bigint, amount, 0::numeric, 0::numeric from released) as moves
          group by account_id) as totals
        where accounts.id = totals.account_id
        returning accounts.id)
      select debit.* from debit;
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function debit_operations(jsonb)`.execute(db);
}
