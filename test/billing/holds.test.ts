import { sql } from 'kysely';
import { itOnEmbeddedEngine, postgresUrl, TestApp } from '../support/harness';
import { pollUntil, storedRequest } from '../responses/helpers';
import { holdPlacement } from '../../src/billing/ledger';
import { createdEvent } from '../../src/responses/response-events';
import { insertQueuedResponses, type QueuedInsert } from '../../src/responses/responses.repository';

/**
 * Billing holds (docs/architecture.md, "Money: holds", api-decisions 25): every billable operation holds the most it can cost
 * at admission, atomically with the check; its debit settles the hold. Under any concurrency the balance never
 * goes below zero, `balance = credits − debits` exactly, and each operation is debited at most once.
 */
describe('billing holds', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
  });
  afterAll(async () => {
    await app.close();
  });

  async function ledgerState(accountId: string) {
    const account = await app.db
      .selectFrom('accounts')
      .select(['balance', 'held'])
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    const rows = await app.db
      .selectFrom('ledger_transactions')
      .select(['type', 'amount', 'operation_key'])
      .where('account_id', '=', accountId)
      .execute();
    const holds = await app.db
      .selectFrom('ledger_holds')
      .select(['operation_key', 'amount'])
      .where('account_id', '=', accountId)
      .execute();
    const credits = rows.filter((row) => row.type === 'credit').reduce((sum, row) => sum + row.amount, 0);
    const debits = rows.filter((row) => row.type === 'debit');
    return {
      balance: account.balance,
      held: account.held,
      openHolds: holds.reduce((sum, hold) => sum + hold.amount, 0),
      credits,
      debited: debits.reduce((sum, row) => sum + row.amount, 0),
      debitCount: debits.length,
      operations: new Set(debits.map((row) => row.operation_key)).size,
    };
  }

  /** The invariants after a burst: nothing held any more, never below zero, the ledger adds up, one debit per operation. */
  function expectSettled(state: Awaited<ReturnType<typeof ledgerState>>) {
    expect(state.held).toBe(0);
    expect(state.openHolds).toBe(0);
    expect(state.balance).toBeGreaterThanOrEqual(0);
    expect(state.balance).toBe(state.credits - state.debited);
    expect(state.operations).toBe(state.debitCount);
  }

  it('holds asked for in the same tick go in one statement, each placed in order as if alone', async () => {
    const ledger = app.runtime.deps.ledger;
    const first = await app.createAccount({ balance: 100 });
    const second = await app.createAccount({ balance: 50 });
    const observe = app.runtime.deps.metrics.groupCommitBatch;
    const before =
      (await observe.get()).values.find(
        (value) => value.labels.writer === 'ledger_holds' && value.metricName?.endsWith('_count'),
      )?.value ?? 0;
    const outcome = (promise: Promise<number>) =>
      promise.then(
        (held) => held,
        (error) => error.code as string,
      );
    const results = await Promise.all([
      outcome(ledger.hold({ accountId: first.accountId, operationKey: 'a', amount: 60 })),
      // Accepts less: gets what is left (40).
      outcome(ledger.hold({ accountId: first.accountId, operationKey: 'b', amount: 60, minAmount: 10 })),
      outcome(ledger.hold({ accountId: second.accountId, operationKey: 'c', amount: 20 })),
      // Nothing left on the first account: refused, however small.
      outcome(ledger.hold({ accountId: first.accountId, operationKey: 'd', amount: 1 })),
      // Raising c within the same batch: to 45 in all (25 more), which the second account still has.
      outcome(ledger.hold({ accountId: second.accountId, operationKey: 'c', amount: 45 })),
      outcome(ledger.hold({ accountId: 'acct_missing', operationKey: 'e', amount: 1 })),
    ]);
    const after =
      (await observe.get()).values.find(
        (value) => value.labels.writer === 'ledger_holds' && value.metricName?.endsWith('_count'),
      )?.value ?? 0;
    expect(results).toEqual([60, 40, 20, 'organization.payment_required', 45, 'organization.payment_required']);
    expect(after - before).toBe(1); // one statement for all six
    expect(await ledgerState(first.accountId)).toMatchObject({ balance: 100, held: 100, openHolds: 100 });
    expect(await ledgerState(second.accountId)).toMatchObject({ balance: 50, held: 45, openHolds: 45 });
    // A hold already as large as asked is left as it is; a release frees it for the next.
    expect(await ledger.hold({ accountId: second.accountId, operationKey: 'c', amount: 30 })).toBe(45);
    await ledger.release(first.accountId, 'a');
    expect(await ledger.hold({ accountId: first.accountId, operationKey: 'd', amount: 70, minAmount: 1 })).toBe(60);
    expect(await ledgerState(first.accountId)).toMatchObject({ held: 100, openHolds: 100 });
  });

  it('an account evidently pays (paysAhead) only by what its last hold here left available: ten holds of the size, spent by each yes, for 5 s', async () => {
    const ledger = app.runtime.deps.ledger;
    const { accountId } = await app.createAccount({ balance: 100_000 });
    const hold = { accountId, operationKey: 'next', amount: 1_000 };
    // Nothing seen of the account yet.
    expect(ledger.paysAhead(hold)).toBe(false);
    expect(await ledger.hold({ accountId, operationKey: 'first', amount: 1_000 })).toBe(1_000);
    // 99,000 left: yes while what is left of it covers ten holds, each yes spending one (99,000 down to 10,000).
    let yes = 0;
    while (ledger.paysAhead(hold)) yes++;
    expect(yes).toBe(90);
    // The next hold's answer is what counts again.
    expect(await ledger.hold({ accountId, operationKey: 'second', amount: 1_000 })).toBe(1_000);
    expect(ledger.paysAhead(hold)).toBe(true);
    // Not after 5 s.
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 5_001);
    try {
      expect(ledger.paysAhead(hold)).toBe(false);
    } finally {
      clock.mockRestore();
    }
    // A hold that leaves less than ten holds' worth (8,000): no.
    expect(await ledger.hold({ accountId, operationKey: 'big', amount: 90_000 })).toBe(90_000);
    expect(ledger.paysAhead(hold)).toBe(false);
    for (const key of ['first', 'second', 'big']) await ledger.release(accountId, key);
  });

  it("a request's hold relaxes durability for its own commit only: every pooled connection is durable after it", async () => {
    const { ledger, db } = app.runtime.deps;
    const { accountId } = await app.createAccount({ balance: 1_000 });
    // Holds of requests (no job) are committed with synchronous_commit off, set for that transaction alone; one
    // that outlived its commit would leave a pooled connection committing everything after it without the fsync.
    await Promise.all(
      Array.from({ length: 30 }, (_, index) => ledger.hold({ accountId, operationKey: `relaxed:${index}`, amount: 1 })),
    );
    await Promise.all(Array.from({ length: 30 }, (_, index) => ledger.release(accountId, `relaxed:${index}`)));
    // As many concurrent reads as the pool has connections, each held a moment so that each takes its own.
    const settings = await Promise.all(
      Array.from({ length: 10 }, () =>
        sql<{ setting: string }>`select current_setting('synchronous_commit') as setting, pg_sleep(0.05)`.execute(db),
      ),
    );
    expect(settings.map((result) => result.rows[0]!.setting)).toEqual(Array(10).fill('on'));
  });

  it('a batch of Response creations places each hold in the same statement and writes only the Responses whose hold came out whole', async () => {
    const { ledger, db } = app.runtime.deps;
    const { accountId } = await app.createAccount({ balance: 100 });
    const queued = (id: string, hold?: { amount: number; min: number }): QueuedInsert => ({
      response: {
        id,
        account_id: accountId,
        started: false,
        background: true,
        model: 'dev-echo',
        vendor: 'dev',
        assistant_id: null,
        conversation_id: null,
        previous_response_id: null,
        request: storedRequest('', { input: [] }),
        metadata: {},
      },
      initialEvents: [createdEvent(id)],
      job: { job_kind: 'response', job_owner: null, job_lease_ms: null },
      ...(hold
        ? {
            hold: holdPlacement({
              accountId,
              operationKey: `response:${id}`,
              jobId: id,
              amount: hold.amount,
              minAmount: hold.min,
            }),
          }
        : {}),
    });
    const results = await insertQueuedResponses(
      db,
      [
        queued('resp_whole', { amount: 60, min: 60 }),
        queued('resp_part', { amount: 60, min: 10 }),
        queued('resp_refused', { amount: 5, min: 1 }),
        queued('resp_unheld'),
      ],
      ledger.placeHoldsQuery,
    );
    expect(
      results.map((result) => (result.row ? `written ${result.row.status}` : `held ${result.holdInEffect}`)),
    ).toEqual(['written queued', 'held 40', 'held 0', 'written queued']);
    const written = await db
      .selectFrom('responses')
      .select('id')
      .where('account_id', '=', accountId)
      .orderBy('id')
      .execute();
    expect(written.map((row) => row.id)).toEqual(['resp_unheld', 'resp_whole']);
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'status'])
      .where('id', 'in', ['resp_whole', 'resp_part', 'resp_refused', 'resp_unheld'])
      .orderBy('id')
      .execute();
    expect(jobs).toEqual([
      { id: 'resp_unheld', status: 'pending' },
      { id: 'resp_whole', status: 'pending' },
    ]);
    // The partial hold stays placed for the caller's second write; the refused one placed nothing.
    expect(
      await db
        .selectFrom('ledger_holds')
        .select(['operation_key', 'amount'])
        .where('account_id', '=', accountId)
        .orderBy('operation_key')
        .execute(),
    ).toEqual([
      { operation_key: 'response:resp_part', amount: 40 },
      { operation_key: 'response:resp_whole', amount: 60 },
    ]);
    expect(await ledgerState(accountId)).toMatchObject({ balance: 100, held: 100 });

    // A statement that fails (a Response id already taken) places none of its holds.
    const other = await app.createAccount({ balance: 100 });
    const retry = queued('resp_whole', { amount: 30, min: 30 });
    const clash = {
      ...retry,
      response: { ...retry.response, account_id: other.accountId },
      hold: { ...retry.hold!, account_id: other.accountId },
    };
    await expect(insertQueuedResponses(db, [clash], ledger.placeHoldsQuery)).rejects.toThrow();
    expect(await ledgerState(other.accountId)).toMatchObject({ balance: 100, held: 0, openHolds: 0 });
    await Promise.all(['resp_whole', 'resp_part'].map((id) => ledger.release(accountId, `response:${id}`)));
    await db.deleteFrom('jobs').where('id', 'in', ['resp_whole', 'resp_unheld']).execute();
  });

  it('500 concurrent synchronous Responses never overdraw 1,000 kopecks', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1000 });
    const replies = await Promise.all(
      Array.from({ length: 500 }, () =>
        app.request('POST', '/v2/responses', {
          key,
          body: { model: 'dev-echo', input: '/words 20', background: false, max_output_tokens: 20 },
        }),
      ),
    );
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.every((status) => status === 200 || status === 402)).toBe(true);
    const paid = replies.filter((reply) => reply.status === 200);
    expect(paid.length).toBeGreaterThan(0);
    expect(paid.every((reply) => reply.body.status === 'completed')).toBe(true);
    for (const refused of replies.filter((reply) => reply.status === 402))
      expect(refused.body.error.code).toBe('organization.payment_required');
    const state = await ledgerState(accountId);
    expectSettled(state);
    // Every completed Response billed once: 2 input words and 20 output words at dev-echo's price = 4.2 kopecks,
    // exact over the account (the carry): the debits together are the costs' sum rounded up once.
    expect(state.debitCount).toBe(paid.length);
    expect(state.debited).toBe(Math.ceil((paid.length * 42) / 10));
    expect(paid.length).toBeLessThanOrEqual(Math.floor((1000 * 10) / 42));
  });

  it('500 concurrent chat completions never overdraw either', async () => {
    const { key, accountId } = await app.createAccount({ balance: 700 });
    const replies = await Promise.all(
      Array.from({ length: 500 }, () =>
        app.request('POST', '/v2/chat/completions', {
          key,
          body: { model: 'dev-echo', messages: [{ role: 'user', content: '/words 10' }], max_tokens: 10 },
        }),
      ),
    );
    expect(replies.every((reply) => reply.status === 200 || reply.status === 402)).toBe(true);
    const paid = replies.filter((reply) => reply.status === 200).length;
    expect(paid).toBeGreaterThan(0);
    const state = await ledgerState(accountId);
    expectSettled(state);
    expect(state.debitCount).toBe(paid);
  });

  it('an open output cap is lowered to what the balance pays; a balance that pays nothing is refused with nothing written', async () => {
    const poor = await app.createAccount({ balance: 1 });
    const refused = await app.request('POST', '/v2/responses', {
      key: poor.key,
      body: { model: 'dev-echo', input: '/words 100000', background: false },
    });
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('organization.payment_required');
    expect(
      await app.db.selectFrom('responses').select('id').where('account_id', '=', poor.accountId).execute(),
    ).toEqual([]);
    expectSettled(await ledgerState(poor.accountId));
    expect((await ledgerState(poor.accountId)).balance).toBe(1);

    const { key, accountId } = await app.createAccount({ balance: 50 });
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: '/words 100000', background: false },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.status).toBe('incomplete');
    expect(reply.body.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    // 50 kopecks less the input's bound pay this many words at 0.2 kopecks each; the Response shows the cap.
    expect(reply.body.max_output_tokens).toBeGreaterThan(100);
    expect(reply.body.max_output_tokens).toBeLessThan(250);
    expect(reply.body.usage.output_tokens).toBe(reply.body.max_output_tokens);
    const state = await ledgerState(accountId);
    expectSettled(state);
    expect(state.debited).toBe(Math.ceil(reply.body.usage.cost));
  });

  it('a request that sets its output cap is refused rather than lowered', async () => {
    const { key, accountId } = await app.createAccount({ balance: 50 });
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: 'hi', background: false, max_output_tokens: 4000 },
    });
    expect(reply.status).toBe(402);
    expectSettled(await ledgerState(accountId));
  });

  it('a running Response holds part of the balance (GET balance: available) until it ends', async () => {
    const { key, accountId } = await app.createAccount({ balance: 10_000 });
    const created = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'dev-echo', input: '/delay 100 /words 5', max_output_tokens: 5 },
    });
    expect(created.status).toBe(200);
    const during = await app.request('GET', '/v2/organization/balance', { key });
    expect(during.body.balance).toBe(10_000);
    expect(during.body.available).toBeLessThan(10_000);
    await pollUntil(
      async () => (await app.request('GET', `/v2/responses/${created.body.id}`, { key })).body.status,
      (status) => status === 'completed',
    );
    const after = await app.request('GET', '/v2/organization/balance', { key });
    expect(after.body.available).toBe(after.body.balance);
    expectSettled(await ledgerState(accountId));
  });

  it('a failed vendor call releases its hold and bills nothing', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1000 });
    const reply = await app.request('POST', '/v2/chat/completions', {
      key,
      body: { model: 'dev-echo', messages: [{ role: 'user', content: '/error server' }] },
    });
    expect(reply.status).toBeGreaterThanOrEqual(400);
    const state = await ledgerState(accountId);
    expectSettled(state);
    expect(state.balance).toBe(1000);
  });

  it('a streamed chat whose client leaves after the first chunk is read to its end and billed, its hold settled', async () => {
    const { key, accountId } = await app.createAccount({ balance: 10_000 });
    for (let attempt = 0; attempt < 5; attempt++) {
      const abort = new AbortController();
      const reply = await fetch(`${app.baseUrl}/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-auth-token': key, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'dev-echo',
          messages: [{ role: 'user', content: '/delay 50 /words 20' }],
          stream: true,
        }),
        signal: abort.signal,
      });
      expect(reply.status).toBe(200);
      await reply.body!.getReader().read();
      abort.abort();
    }
    await pollUntil(
      async () => (await ledgerState(accountId)).held,
      (held) => held === 0,
    ).catch(() => undefined);
    const state = await ledgerState(accountId);
    expectSettled(state);
    expect(state.debitCount).toBe(5);
  });

  it('embeddings, speech and each round of a Run hold and settle the same way', async () => {
    const { key, accountId } = await app.createAccount({ balance: 100_000 });
    expect(
      (
        await app.request('POST', '/v2/embeddings', {
          key,
          body: { model: 'dev-embed', input: 'a few words to embed' },
        })
      ).status,
    ).toBe(200);
    const speech = await fetch(`${app.baseUrl}/v2/audio/speech`, {
      method: 'POST',
      headers: { 'x-auth-token': key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'dev-tts', voice: 'en-us', text: 'Hello there.' }),
    });
    expect(speech.status).toBe(200);
    await speech.arrayBuffer();
    const assistant = (await app.request('POST', '/v2/assistants', { key, body: { model: 'dev-echo', name: 'Echo' } }))
      .body.id;
    const run = (
      await app.request('POST', '/v2/threads/runs', {
        key,
        body: { assistant_id: assistant, thread: { messages: [{ role: 'user', content: '/words 30' }] } },
      })
    ).body;
    expect(run.status).toBe('queued');
    await pollUntil(
      async () => (await app.request('GET', `/v2/threads/${run.thread_id}/runs/${run.id}`, { key })).body.status,
      (status) => status === 'completed',
    );
    const state = await ledgerState(accountId);
    expectSettled(state);
    expect(state.debitCount).toBe(3);
  });

  it('a cost beyond its hold is charged from what the balance has spare, never below zero', async () => {
    const { accountId } = await app.createAccount({ balance: 100 });
    const { ledger } = app.runtime.deps;
    await ledger.hold({ accountId, operationKey: 'test:small', amount: 10 });
    await ledger.hold({ accountId, operationKey: 'test:other', amount: 60 });
    // 50 held by nobody else is spare: a debit of 80 under a hold of 10 gets 10 + 30 (the other hold keeps its 60).
    const row = await ledger.debit({ accountId, cost: '80', operationKey: 'test:small', metadata: { source: 'test' } });
    expect(row!.amount).toBe(40);
    expect(row!.metadata).toEqual({ source: 'test', cost: 80, carry: 0, uncollected: 40 });
    let state = await ledgerState(accountId);
    expect(state).toMatchObject({ balance: 60, held: 60, openHolds: 60 });
    await ledger.debit({ accountId, cost: '70', operationKey: 'test:other', metadata: { source: 'test' } });
    state = await ledgerState(accountId);
    expectSettled(state);
    expect(state.balance).toBe(0);
  });

  it("the sweep releases this process's own holds once older than any request lasts: an error path whose release failed leaks nothing for long", async () => {
    const { accountId } = await app.createAccount({ balance: 500 });
    const { ledger, db } = app.runtime.deps;
    await ledger.hold({ accountId, operationKey: 'chat:req_release_failed', amount: 100 });
    await ledger.hold({ accountId, operationKey: 'response:resp_unwritten', amount: 50, jobId: 'resp_unwritten' });
    await ledger.hold({ accountId, operationKey: 'chat:req_in_flight', amount: 10 });
    const sweep = () => ledger.releaseAbandoned({ ownerDied: sql<boolean>`false`, maxAgeMs: 60_000 });
    await sweep();
    expect((await ledgerState(accountId)).held).toBe(160);
    await sql`update ledger_holds set created_at = now() - interval '2 minutes' where account_id = ${accountId} and operation_key <> 'chat:req_in_flight'`.execute(
      db,
    );
    await sweep();
    expect(
      await db.selectFrom('ledger_holds').select('operation_key').where('account_id', '=', accountId).execute(),
    ).toEqual([{ operation_key: 'chat:req_in_flight' }]);
    expect(await ledgerState(accountId)).toMatchObject({ balance: 500, held: 10, openHolds: 10 });
    await ledger.release(accountId, 'chat:req_in_flight');
  });

  // Embedded engine: a dead process's liveness lock tells its holds are orphaned. Under Temporal an API process holds
  // no such lock and a job's hold belongs to a workflow that outlives the process that placed it: they wait an hour.
  itOnEmbeddedEngine('holds a dead process left are released by the next start', async () => {
    const dataDir = postgresUrl
      ? undefined
      : (await import('node:fs')).mkdtempSync(
          (await import('node:path')).join((await import('node:os')).tmpdir(), 'holds-'),
        );
    let restartable = await TestApp.start({ dataDir });
    const schema = restartable.schema;
    try {
      const { accountId } = await restartable.createAccount({ balance: 500 });
      // A request's hold whose process died, and a job's hold whose job row was never written.
      await sql`insert into ledger_holds (account_id, operation_key, amount, owner, job_id, created_at) values
        (${accountId}, 'chat:req_dead', 100, 'host:1:dead', null, now()),
        (${accountId}, 'response:resp_never', 50, 'host:1:dead', 'resp_never', now())`.execute(restartable.db);
      await sql`update accounts set held = held + 150 where id = ${accountId}`.execute(restartable.db);
      await restartable.stop();
      restartable = await TestApp.start({ dataDir, schema });
      const account = await restartable.db
        .selectFrom('accounts')
        .select(['balance', 'held'])
        .where('id', '=', accountId)
        .executeTakeFirstOrThrow();
      expect(account).toEqual({ balance: 500, held: 0 });
      expect(
        await restartable.db.selectFrom('ledger_holds').selectAll().where('account_id', '=', accountId).execute(),
      ).toEqual([]);
    } finally {
      await restartable.close();
    }
  });
});
