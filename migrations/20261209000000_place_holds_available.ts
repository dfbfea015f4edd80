import { sql, type Kysely } from 'kysely';
import * as previous from './20261201000000_place_holds_no_key_lock';

/**
 * `place_holds` also answers, for each hold, the account's available balance after it (`available_after`: balance
 * minus every open hold, this one included, as read under the account row's lock).
 *
 * A process uses it to tell whether an account evidently pays its next request (src/billing/ledger.ts, `paysAhead`):
 * a chat completion of such an account starts its vendor call beside the hold instead of after it, and uses nothing
 * the vendor answers before the hold is placed. Adding an output column changes the function's type, which `create or
 * replace` cannot do: it is dropped and created again, in this migration's transaction. Callers that read only `idx`
 * and `in_effect` (a Response's creation) are unchanged.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop function place_holds(jsonb, text)`.execute(db);
  await sql`
    create function place_holds(requests jsonb, hold_owner text)
    returns table (idx integer, in_effect bigint, available_after bigint)
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
        available_after := available;
        return next;
      end loop;
      if current_account is not null and raised > 0 then
        update accounts set held = held + raised where id = current_account;
      end if;
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function place_holds(jsonb, text)`.execute(db);
  await previous.up(db);
}
