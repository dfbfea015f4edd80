import { sql } from 'kysely';
import { useTestApp } from '../support/harness';
import { isTerminal } from '../support/sse';
import { openCreateStream, openResumeStream } from './helpers';

/**
 * Deltas reach the readers in this process before they are stored (EventWriter, EventLog.deliver). When
 * storing a batch fails after its readers saw it, the Response must end with those events stored as they
 * were seen, and never be generated again under the same sequence numbers.
 */
describe('responses: a stream batch that cannot be stored', () => {
  const suite = useTestApp();
  beforeAll(async () => {
    // A real database fault: the first stored batch holding a delta with the marker fails (a sequence is
    // not rolled back with the failed statement, so later writes of the same events succeed).
    await sql`create sequence marked_batch_writes`.execute(suite.app.db);
    await sql`
      create function fail_first_marked_batch() returns trigger language plpgsql as $$
      begin
        if exists (select 1 from jsonb_array_elements(new.events) as event
                   where event->>'type' = 'response.output_text.delta' and event->>'delta' like '%FAILWRITE%')
           and nextval('marked_batch_writes') = 1 then
          raise exception 'injected: the event batch cannot be stored';
        end if;
        return new;
      end $$`.execute(suite.app.db);
    await sql`create trigger fail_first_marked_batch before insert on stream_events for each row execute function fail_first_marked_batch()`.execute(
      suite.app.db,
    );
  });

  it('ends failed (response.interrupted) with the events its live reader saw, stored gap-free, and runs once', async () => {
    const stream = await openCreateStream(suite.app, suite.key, {
      input: '/delay 20 one two FAILWRITE four five six seven',
    });
    expect(stream.status).toBe(200);
    const live = await stream.readAll();
    const terminal = live.at(-1)!;
    expect(isTerminal(terminal)).toBe(true);
    expect(terminal.event).toBe('response.failed');
    expect(terminal.data.response.error).toEqual({
      code: 'response.interrupted',
      message: expect.stringContaining('could not be stored'),
      type: 'server_error',
      param: null,
    });
    expect(terminal.data.response.output).toEqual([]);
    live.forEach((event, index) => expect(event.data.sequence_number).toBe(index));
    // The reader saw the text up to the batch that failed (delivered before its write), and nothing after it.
    const text = live
      .filter((event) => event.event === 'response.output_text.delta')
      .map((event) => event.data.delta)
      .join('');
    expect(text).toContain('FAILWRITE');
    expect(text).not.toContain('seven');

    // Stored: exactly what the live reader saw.
    const id = terminal.data.response.id as string;
    const replay = await (await openResumeStream(suite.app, suite.key, id)).readAll();
    expect(replay.map((event) => event.data)).toEqual(live.map((event) => event.data));

    // Final, and its job is not run again (no second generation under the same numbers).
    await suite.app.untilJobEnded({ kind: 'response', id });
    if (suite.app.engine === 'embedded') {
      const job = await suite.app.db
        .selectFrom('jobs')
        .select(['status', 'attempts'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(job).toEqual({ status: 'completed', attempts: 1 });
    }
    const stored = await suite.app.request('GET', `/v2/responses/${id}`, { key: suite.key });
    expect(stored.body).toMatchObject({ status: 'failed', error: { code: 'response.interrupted' } });
  });
});

describe('responses: a stream batch whose write committed but was reported failed', () => {
  const suite = useTestApp();
  beforeAll(async () => {
    // The reply of a committed write is lost (a connection reset after COMMIT): the batch is stored, its
    // writer sees a failure, and the batches delivered after it are not.
    const events = suite.app.runtime.deps.events;
    const append = events.append.bind(events);
    let failed = false;
    events.append = async (stream, batch) => {
      await append(stream, batch);
      if (
        !failed &&
        batch.some((event) => event.type === 'response.output_text.delta' && String(event.delta).includes('LOSTREPLY'))
      ) {
        failed = true;
        await new Promise((resolve) => setTimeout(resolve, 150)); // later batches are delivered meanwhile
        throw new Error('connection reset after commit');
      }
    };
  });

  it('stores every event the live reader saw, once and gap-free, after the batch that is already stored', async () => {
    const stream = await openCreateStream(suite.app, suite.key, {
      input: '/delay 20 one two LOSTREPLY four five six seven eight nine ten',
    });
    const live = await stream.readAll();
    const terminal = live.at(-1)!;
    expect(terminal.event).toBe('response.failed');
    live.forEach((event, index) => expect(event.data.sequence_number).toBe(index));
    const text = live
      .filter((event) => event.event === 'response.output_text.delta')
      .map((event) => event.data.delta)
      .join('');
    expect(text).toMatch(/LOSTREPLY four/); // batches after the failed one were delivered live

    const id = terminal.data.response.id as string;
    const replay = await (await openResumeStream(suite.app, suite.key, id)).readAll();
    expect(replay.map((event) => event.data)).toEqual(live.map((event) => event.data));
    const rows = await suite.app.db
      .selectFrom('stream_events')
      .select(['first_seq', 'last_seq'])
      .where('stream_id', '=', id)
      .orderBy('first_seq')
      .execute();
    rows.forEach((row, index) => expect(row.first_seq).toBe(index === 0 ? 0 : rows[index - 1].last_seq + 1));
  });
});
