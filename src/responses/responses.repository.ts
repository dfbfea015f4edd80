import { sql } from 'kysely';
import type { HoldPlacement, Ledger } from '../billing/ledger';
import type { Db } from '../db/database';
import { jobOutboxFrom, type JobOutboxColumns } from '../engine/admission';
import type { StreamEvent } from '../events/stream-event';
import type { FinalRecord } from './finalization';
import type { InputItem, OutputItem } from './response-types';
import type { ResponseRow } from './responses.table';

/** The Responses slice's queries; transactions and batching belong to the callers. */

/** A Response of the account, unless deleted. */
export async function findResponse(executor: Db, accountId: string, id: string): Promise<ResponseRow | undefined> {
  return executor
    .selectFrom('responses')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** A Response by id alone, deleted or not. */
export async function findResponseById(executor: Db, id: string): Promise<ResponseRow | undefined> {
  return executor.selectFrom('responses').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A Response by id alone, deleted or not: for its own job, which knows it exists. */
export async function loadResponse(executor: Db, id: string): Promise<ResponseRow> {
  return executor.selectFrom('responses').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

export async function readStatus(executor: Db, id: string) {
  return executor
    .selectFrom('responses')
    .select(['status', 'cancel_requested_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The Response and the sequence number its stream's next event takes (after everything stored). */
export async function loadWithNextSequence(
  executor: Db,
  id: string,
): Promise<{ row: ResponseRow; nextSequence: number }> {
  const { next_sequence: nextSequence, ...row } = await executor
    .selectFrom('responses')
    .selectAll()
    .select((eb) =>
      eb
        .selectFrom('stream_events')
        .select(sql<number>`coalesce(max(last_seq), -1) + 1`.as('next'))
        .where('stream_id', '=', id)
        .as('next_sequence'),
    )
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return { row, nextSequence: Number(nextSequence) };
}

/** One link of a previous_response_id chain: its input and output, and the link before it. */
export async function findChainLink(executor: Db, accountId: string, id: string) {
  const row:
    | { input: InputItem[]; output: OutputItem[]; previous_response_id: string | null; deleted_at: Date | null }
    | undefined = await executor
    .selectFrom('responses')
    .select([sql<InputItem[]>`request -> 'input'`.as('input'), 'output', 'previous_response_id', 'deleted_at'])
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row;
}

/** A new Response as its creation writes it (`created_at`, and `started_at` when started, are the database's now). */
export type NewResponse = Pick<
  ResponseRow,
  | 'id'
  | 'account_id'
  | 'background'
  | 'model'
  | 'vendor'
  | 'assistant_id'
  | 'conversation_id'
  | 'previous_response_id'
  | 'request'
  | 'metadata'
> & {
  /** Written started (`in_progress`) instead of `queued`. */
  started: boolean;
};

/** What one step of a Response hands to the next in this process (engine/job-handoff.ts). */
export interface HandedRow {
  row: ResponseRow;
  /** The sequence number the Response's next event takes, when the hander knows it. */
  nextSequence?: number;
  /** Written already started (in_progress, both lifecycle events) by its creator, which runs its job itself. */
  startedAtCreation?: boolean;
}

export interface QueuedInsert {
  response: NewResponse;
  /** The first events of its stream: `response.created`, and `response.in_progress` when written started. */
  initialEvents: StreamEvent[];
  /** Its job's outbox row (engine.admit's admission). */
  job: JobOutboxColumns;
  /**
   * Its billing hold, placed by the same statement: the Response is written only if the hold comes out at
   * exactly this amount (its request was computed for that hold); otherwise nothing of it is written and the
   * result carries the hold now in effect (the caller refuses, or writes it again computed for a smaller hold).
   */
  hold?: HoldPlacement;
}

export type QueuedResult = { row: ResponseRow; holdInEffect?: undefined } | { row: undefined; holdInEffect: number };

/**
 * New Responses, their initial events (from sequence 0), their job rows (the engine's outbox, as each one's
 * admission has it) and their holds, in one statement: atomic without a transaction's round trips, and one
 * prepared statement whatever the batch size (the rows travel as one jsonb parameter). Foreign keys are checked
 * at statement end. `placeHolds` (the ledger's) is needed when an item has a hold. Answers one result per
 * item, in the order given.
 */
export async function insertQueuedResponses(
  executor: Db,
  items: QueuedInsert[],
  placeHolds?: Ledger['placeHoldsQuery'],
): Promise<QueuedResult[]> {
  const input = items.map(({ response, initialEvents, job, hold }, idx) => ({
    idx,
    ...response,
    initial_events: initialEvents,
    ...job,
    hold_amount: hold?.amount ?? null,
  }));
  const placements = items.flatMap(({ hold }, idx) => (hold ? [{ ...hold, idx }] : []));
  if (placements.length > 0 && !placeHolds)
    throw new Error("insertQueuedResponses: holds given without the ledger's placeHoldsQuery");
  const holds =
    placements.length > 0
      ? placeHolds!(placements)
      : sql`select null::integer as idx, null::bigint as in_effect where false`;
  const written = await sql<ResponseRow & { admission_idx: number; admission_hold: string | number | null }>`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as input (
        idx integer, id text, account_id text, started boolean, background boolean, model text, vendor text,
        assistant_id integer, conversation_id text, previous_response_id text, request jsonb, metadata jsonb,
        initial_events jsonb, job_kind text, job_owner text, job_lease_ms integer, hold_amount bigint)),
    holds as (${holds}),
    admitted as (
      select input.* from input left join holds on holds.idx = input.idx
      where input.hold_amount is null or holds.in_effect = input.hold_amount),
    created_event as (
      insert into stream_events (stream_id, first_seq, last_seq, events)
      select id, 0, jsonb_array_length(initial_events) - 1, initial_events from admitted),
    outbox as (${jobOutboxFrom('admitted')}),
    created as (
      insert into responses (id, account_id, status, started_at, background, model, vendor, assistant_id,
        conversation_id, previous_response_id, request, metadata)
      select id, account_id, case when started then 'in_progress' else 'queued' end, case when started then now() end,
        background, model, vendor, assistant_id, conversation_id, previous_response_id, request, metadata
      from admitted
      returning *)
    select input.idx as admission_idx, holds.in_effect as admission_hold, created.*
    from input left join holds on holds.idx = input.idx left join created on created.id = input.id`.execute(executor);
  const results = new Array<QueuedResult>(items.length);
  for (const { admission_idx: idx, admission_hold: inEffect, ...row } of written.rows) {
    results[idx] = row.id !== null ? { row } : { row: undefined, holdInEffect: Number(inEffect ?? 0) };
  }
  return results;
}

/**
 * queued → in_progress plus the `response.in_progress` event (always sequence 1: only `response.created`, 0,
 * is written before it), for many Responses in one statement. Skips any cancelled or no longer queued;
 * answers the rows it started.
 */
export async function startQueuedResponses(
  executor: Db,
  ids: string[],
  inProgressEvents: Record<string, StreamEvent[]>,
): Promise<ResponseRow[]> {
  const started = await sql<ResponseRow>`
    with started as (
      update responses set status = 'in_progress', started_at = now()
      where id = any(${ids}::text[]) and status = 'queued' and cancel_requested_at is null
      returning *),
    event as (
      insert into stream_events (stream_id, first_seq, last_seq, events)
      select id, 1, 1, ${JSON.stringify(inProgressEvents)}::jsonb -> id from started)
    select * from started`.execute(executor);
  return started.rows;
}

/**
 * Finalises Responses in one statement (a data-modifying CTE over the records): final status, output and
 * usage; the generation's unwritten closing events and the final event, whose sequence number is the
 * stream's next one, read by the statement itself (a failed or cancelled generation may not know it); the
 * debit and its balance change (the ledger's `debit_operations`). Guarded by the stored status: a Response that a
 * concurrent cancel (or a previous run) finalised first gets none of it. Answers, per Response written, the final
 * event's sequence number and the whole kopecks debited (its cost less the account's carry, rounded up).
 */
export async function writeFinalizations(
  executor: Db,
  records: FinalRecord[],
): Promise<Map<string, { sequence: number; debited: number }>> {
  const written = await sql<{ id: string; sequence: number; debited: string | number | null }>`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(records)}::jsonb) as input (
        id text, status text, output jsonb, usage jsonb, error jsonb, incomplete_details jsonb, completed_at timestamptz,
        final_event jsonb, tail_first int, tail_last int, tail_events jsonb,
        debit_id text, debit_cost numeric, debit_currency text, debit_metadata text, debit_usage text, debit_operation_key text,
        model text, vendor text)),
    updated as (
      update responses set
        status = input.status, output = input.output, usage = input.usage, error = input.error,
        incomplete_details = input.incomplete_details, completed_at = input.completed_at,
        -- A Response to a route shows the target that served it.
        model = coalesce(input.model, responses.model), vendor = coalesce(input.vendor, responses.vendor)
      from input
      where responses.id = input.id and responses.status in ('queued', 'in_progress')
        -- The ids again as an array: an index condition for the planner, which otherwise guesses the recordset at
        -- 100 rows and scans the whole table (a plan the prepared statement then keeps).
        and responses.id = any(${records.map((record) => record.id)}::text[])
        -- The accounts are locked before any Response row (an init plan, run before the first row is updated), in
        -- id order, as every statement that debits does: a cancel finalising one of these Responses meanwhile waits
        -- for the account instead of holding its Response while this waits for the account (a deadlock).
        and (select count(*) from (
          select 1 from accounts where id = any(${[...new Set(records.map((record) => record.account_id))].sort()}::text[])
          order by id for no key update) as accounts_locked) >= 0
      returning responses.id, responses.account_id),
    stored as (
      select updated.id, coalesce((select max(last_seq) from stream_events where stream_events.stream_id = updated.id), -1) as last_seq
      from updated),
    tail_events as (
      -- Only the tail's events after what is stored: a batch whose write failed may in fact have committed
      -- (its reply lost), and the batches after it must still be stored.
      insert into stream_events (stream_id, first_seq, last_seq, events)
      select input.id, (tail.events -> 0 ->> 'sequence_number')::int, input.tail_last, tail.events
      from stored join input on input.id = stored.id
      cross join lateral (
        select jsonb_agg(event order by position) as events
        from jsonb_array_elements(input.tail_events) with ordinality as element (event, position)
        where (event ->> 'sequence_number')::int > stored.last_seq) as tail
      where input.tail_events is not null and tail.events is not null),
    next_event as (
      select stored.id, greatest(stored.last_seq + 1, coalesce(input.tail_last + 1, 0)) as sequence
      from stored join input on input.id = stored.id),
    final_event as (
      insert into stream_events (stream_id, first_seq, last_seq, events)
      select next_event.id, next_event.sequence, next_event.sequence,
        jsonb_build_array(jsonb_set(input.final_event, '{sequence_number}', to_jsonb(next_event.sequence)))
      from next_event join input on input.id = next_event.id),
    billable as (
      select input.debit_id as id, updated.account_id, input.debit_cost as cost, input.debit_currency as currency,
        input.debit_metadata as metadata, input.debit_usage as usage, input.debit_operation_key as operation_key
      from updated join input on input.id = updated.id
      where input.debit_id is not null),
    -- The ledger's one statement for debits (it locks their accounts first; a Response whose row was not updated
    -- here bills nothing). Its rows are read below whenever a Response was written, which runs it whole.
    debit as (
      select * from debit_operations((select coalesce(jsonb_agg(to_jsonb(billable)), '[]'::jsonb) from billable)))
    select next_event.id, next_event.sequence, debit.amount as debited
    from next_event left join debit on debit.operation_key = 'response:' || next_event.id`.execute(executor);
  return new Map(
    written.rows.map((row) => [row.id, { sequence: Number(row.sequence), debited: Number(row.debited ?? 0) }]),
  );
}

/** Records a cancel request on the row (the workflow reads it when it starts or finalises). */
export async function markCancelRequested(executor: Db, id: string): Promise<void> {
  await executor
    .updateTable('responses')
    .set({ cancel_requested_at: sql`coalesce(cancel_requested_at, now())` })
    .where('id', '=', id)
    .execute();
}

export async function markDeleted(executor: Db, accountId: string, id: string): Promise<void> {
  await executor
    .updateTable('responses')
    .set({ deleted_at: sql`now()` })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .execute();
}
