import { sql, type Kysely } from 'kysely';

/**
 * `place_holds(requests, owner)`: the holds of concurrent operations in one statement (billing/ledger.ts,
 * `hold`), in the order given, each exactly as a hold placed alone would be: it raises the operation's hold
 * to `amount`, or to as much as the account's available balance (`balance - held`) allows if that is at least
 * `min_amount`, or places nothing. Each account of the batch is locked once, in id order (two batches never
 * wait on each other in a cycle), and its `held` is updated once with the sum of its new holds.
 *
 * Answers one row per request: its index and the operation's hold now in effect (0: none; the caller then
 * refuses the operation, 402). An account that does not exist answers its current hold (none).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function place_holds(requests jsonb, hold_owner text)
    returns table (idx integer, in_effect bigint)
    language plpgsql as $$
    declare
      r record;
      current_account text;
      available bigint;
      raised bigint := 0;
      current_amount bigint;
      delta bigint;
    begin
      perform 1 from accounts
      where id in (select distinct x.account_id from jsonb_to_recordset(requests) as x (account_id text))
      order by id
      for update;
      for r in
        select * from jsonb_to_recordset(requests)
          as x (idx integer, account_id text, operation_key text, amount bigint, min_amount bigint, job_id text)
        order by x.account_id, x.idx
      loop
        if current_account is distinct from r.account_id then
          if current_account is not null and raised > 0 then
            update accounts set held = held + raised where id = current_account;
          end if;
          current_account := r.account_id;
          raised := 0;
          select balance - held into available from accounts where id = r.account_id;
        end if;
        select coalesce((select h.amount from ledger_holds h where h.account_id = r.account_id and h.operation_key = r.operation_key), 0)
          into current_amount;
        if available is not null and current_amount < r.amount and available > 0 and available >= r.min_amount - current_amount then
          delta := least(r.amount - current_amount, available);
          insert into ledger_holds (account_id, operation_key, amount, job_id, owner)
          values (r.account_id, r.operation_key, delta, r.job_id, hold_owner)
          on conflict (account_id, operation_key) do update set amount = ledger_holds.amount + excluded.amount
          returning ledger_holds.amount into current_amount;
          available := available - delta;
          raised := raised + delta;
        end if;
        idx := r.idx;
        in_effect := current_amount;
        return next;
      end loop;
      if current_account is not null and raised > 0 then
        update accounts set held = held + raised where id = current_account;
      end if;
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists place_holds(jsonb, text)`.execute(db);
}
