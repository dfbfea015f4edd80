import { sql, type Kysely } from 'kysely';
import * as previous from './20261130000000_place_holds';

/**
 * `place_holds` locks the accounts of its batch `for no key update` instead of `for update`.
 *
 * A transaction that writes a row referring to an account (a thread, a message, a Run, a job's Response) takes
 * a key-share lock on that account's row for the foreign key, and one that then places a hold asks for the row
 * itself: with `for update`, which conflicts with key-share, two such transactions on one account each waited
 * for the other's key-share lock (Postgres found the cycle and failed one: concurrent Run creations answered
 * 500). `for no key update` is what updating `held` needs and all it takes: it still serialises the holds of
 * one account, but no longer waits for a foreign key check.
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
      for no key update;
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
  await previous.up(db);
}
