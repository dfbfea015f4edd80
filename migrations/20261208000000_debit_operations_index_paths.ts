import { sql, type Kysely } from 'kysely';
import * as previous from './20261207000000_debit_operations';

/**
 * `debit_operations` reaches the rows it reads and writes through indexes, whatever the planner knew of the tables
 * when it made its plan.
 *
 * PL/pgSQL keeps a plan per connection, made at its first calls, and its input is a JSON array, which the planner
 * guesses at 100 rows. On a new database (a new deployment, each bench run) the first calls met empty tables, and the
 * plan joined those 100 rows by hash against `ledger_transactions` (the check that an operation is not billed yet),
 * `ledger_holds` and `accounts`, each scanned whole. Postgres plans again only when the tables' statistics change, so
 * the connection kept scanning a growing ledger until then: in a bench of synchronous Responses the debit's statement
 * took 3.5 ms of Postgres time, against 1.2 ms for the whole finalisation that wrote the same debit before it moved
 * into the function (20261207000000).
 *
 * Now the input is read through `debit_rows`, which tells the planner it is small (`rows 1`: a debit is one row,
 * a batch a few dozen), so every table is reached by nested index lookups, the cheaper plan at any size of the
 * ledger; `volatile` keeps Postgres from inlining it (which would drop the estimate). The accounts are named by an
 * array read first (`= any(account_ids)`), an index condition for the lock, the read and the update. The function's
 * own `rows 10` says it answers about as many rows as its input. Results are the same; only the plans change.
 *
 * Not solved here: such a plan may look an operation up through `(account_id, created_at)` rather than the unique
 * `(account_id, operation_key)`, which to the planner of an empty table cost the same; it then reads that account's
 * ledger rows until autovacuum's first analyze of the table makes Postgres plan again.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function debit_rows(debits jsonb)
    returns table (id text, account_id text, cost numeric, currency text, metadata text, usage text, operation_key text)
    language sql volatile rows 1 as $$
      select * from jsonb_to_recordset(debits) as x (
        id text, account_id text, cost numeric, currency text, metadata text, usage text, operation_key text)
    $$`.execute(db);
  await sql`
    create or replace function debit_operations(debits jsonb)
    returns setof ledger_transactions
    language plpgsql volatile rows 10 as $$
    declare
      account_ids text[];
    begin
      select coalesce(array_agg(distinct x.account_id), '{}') into account_ids
      from jsonb_to_recordset(debits) as x (account_id text);
      perform 1 from accounts where id = any(account_ids) order by id for no key update;
      return query
      with billable as (select * from debit_rows(debits)),
      released as (
        delete from ledger_holds using billable
        where ledger_holds.account_id = billable.account_id and ledger_holds.operation_key = billable.operation_key
        returning ledger_holds.account_id, ledger_holds.operation_key, ledger_holds.amount),
      locked as (
        select id, balance, held, cost_carry from accounts where id = any(account_ids)),
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
        where accounts.id = totals.account_id and accounts.id = any(account_ids)
        returning accounts.id)
      select debit.* from debit;
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function debit_operations(jsonb)`.execute(db);
  await sql`drop function debit_rows(jsonb)`.execute(db);
  await previous.up(db);
}
