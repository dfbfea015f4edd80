import { sql } from 'kysely';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { postgresUrl, TestApp } from '../support/harness';

/**
 * A chat completion's vendor call starts beside its hold once the account evidently pays (Ledger.paysAhead: the
 * available balance this process saw after its last hold covers ten such holds), and after the hold otherwise. The
 * hold stays the one check of the balance: nothing the vendor answered is used before it is placed, a hold refused
 * meanwhile aborts the call (402, nothing held or billed), and a hold placed lower than asked (an open output cap the
 * balance no longer pays) aborts it and calls again with the cap the hold pays.
 *
 * Each test holds the account's row locked from another transaction, so the request's hold waits on the lock while
 * the test watches what reaches the vendor, then changes the balance under that lock. Postgres only: PGlite has one
 * connection, which the lock's transaction would take from the request.
 */
(postgresUrl ? describe : describe.skip)('the vendor call beside the hold', () => {
  let fake: FakeVendorServer;
  let app: TestApp;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    app = await TestApp.start({ env: { OPENAI_API_KEY: 'sk-fake-openai-key', OPENAI_BASE_URL: fake.baseURL } });
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  const MODEL = 'gpt-4.1-mini';
  /** An open cap: the hold is gpt-4.1-mini's 32,768 output tokens' worth (about 525 kopecks), lowered if need be. */
  const body = (text: string, stream = false) => ({
    model: MODEL,
    messages: [{ role: 'user', content: text }],
    stream,
  });
  const chat = (key: string, payload: unknown) =>
    app.request('POST', '/openai/v1/chat/completions', { key, body: payload });

  /**
   * Sends `request` while the account's row is locked by another transaction (so every hold of it waits), runs
   * `during` with that transaction, commits, and answers the request's reply.
   */
  async function whileLocked<T>(
    accountId: string,
    request: () => Promise<T>,
    during: (trx: typeof app.db) => Promise<void>,
  ): Promise<T> {
    const sent = await app.db.transaction().execute(async (trx) => {
      await sql`select 1 from accounts where id = ${accountId} for update`.execute(trx);
      // In an object: a promise returned from here would be awaited before the commit it waits for.
      const reply = { promise: request() };
      await during(trx);
      return reply;
    });
    return sent.promise;
  }

  /** Resolves once a statement placing holds waits for `trx` (the request's hold, behind `whileLocked`). */
  async function holdWaiting(trx: typeof app.db): Promise<void> {
    const { rows: own } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
    for (;;) {
      const { rows } = await sql<{ waiting: number }>`
        select count(*)::int as waiting from pg_stat_activity
        where ${own[0]!.pid}::int = any(pg_blocking_pids(pid)) and query like '%place_holds%'`.execute(app.db);
      if (rows[0]!.waiting > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Holds `amount` of the account's balance for another operation, as another process's request would. */
  async function holdElsewhere(trx: typeof app.db, accountId: string, leave: number): Promise<void> {
    const { rows } = await sql<{ available: string }>`
      select balance - held as available from accounts where id = ${accountId}`.execute(trx);
    const amount = Number(rows[0]!.available) - leave;
    await sql`insert into ledger_holds (account_id, operation_key, amount, owner)
      values (${accountId}, 'elsewhere', ${amount}, 'another-process')`.execute(trx);
    await sql`update accounts set held = held + ${amount} where id = ${accountId}`.execute(trx);
  }

  /** Vendor calls that ended cancelled (the metric every call reports when it ends). */
  const cancelledCalls = async () =>
    (await app.runtime.deps.metrics.vendorCallDuration.get()).values.find(
      (value) =>
        value.metricName?.endsWith('_count') &&
        value.labels.vendor === 'openai' &&
        value.labels.outcome === 'cancelled',
    )?.value ?? 0;

  const ledgerOf = async (accountId: string) => ({
    debits: await app.db
      .selectFrom('ledger_transactions')
      .select(['amount', 'operation_key'])
      .where('account_id', '=', accountId)
      .where('type', '=', 'debit')
      .execute(),
    holds: await app.db
      .selectFrom('ledger_holds')
      .select(['operation_key', 'amount'])
      .where('account_id', '=', accountId)
      .execute(),
  });

  it("calls after the hold while the account's balance is unknown to the process, beside it once it evidently pays", async () => {
    const { key, accountId } = await app.createAccount({ balance: 1_000_000 });

    // First request: nothing seen of this account yet, so the hold comes first and the vendor waits for it.
    const first = await whileLocked(
      accountId,
      () => chat(key, body('first')),
      async (trx) => {
        await holdWaiting(trx);
        expect(fake.requests.length).toBe(0);
      },
    );
    expect(first.status).toBe(200);

    // Second request: the first hold left far more than ten such holds available; the call goes out while the hold
    // still waits for the lock.
    const second = await whileLocked(
      accountId,
      () => chat(key, body('second')),
      async (trx) => {
        await fake.waitForRequests(2);
        await holdWaiting(trx);
      },
    );
    expect(second.status).toBe(200);
    expect(second.body.choices[0].message.content).toEqual(expect.any(String));
    const { debits, holds } = await ledgerOf(accountId);
    expect(debits).toHaveLength(2);
    expect(holds).toEqual([]);
  });

  it('at most 8 calls are ahead of their holds at once; the others wait for their holds, and all are billed once', async () => {
    const { key, accountId } = await app.createAccount({ balance: 10_000_000 });
    expect((await chat(key, body('warm'))).status).toBe(200);
    fake.reset();
    const replies = await whileLocked(
      accountId,
      () => Promise.all(Array.from({ length: 12 }, (_, index) => chat(key, body(`burst ${index}`)))),
      async (trx) => {
        await fake.waitForRequests(8);
        await holdWaiting(trx);
        // The other four are behind their holds, which wait for the lock.
        expect(fake.requests.length).toBe(8);
      },
    );
    expect(replies.map((reply) => reply.status)).toEqual(new Array(12).fill(200));
    expect(fake.requests.length).toBe(12);
    const { debits, holds } = await ledgerOf(accountId);
    expect(debits).toHaveLength(13);
    expect(holds).toEqual([]);
  });

  it('a hold refused while the call is out aborts the call: 402, nothing held or billed (and a stream never starts)', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1_000_000 });
    expect((await chat(key, body('warm'))).status).toBe(200);

    for (const stream of [false, true]) {
      fake.reset();
      // A stream's first part comes, then nothing: the aborted call is closed (and counted) all the same.
      fake.script(stream ? { hangAfterDeltas: 1 } : { hang: true });
      const cancelledBefore = await cancelledCalls();
      const billedBefore = (await ledgerOf(accountId)).debits.length;
      const refused = await whileLocked(
        accountId,
        () => chat(key, body(`refused ${stream ? 'stream' : 'call'}`, stream)),
        async (trx) => {
          await fake.waitForRequests(1);
          // Another process spends the balance meanwhile.
          await holdElsewhere(trx, accountId, 0);
        },
      );
      expect(refused.status).toBe(402);
      expect(refused.headers.get('content-type')).toContain('application/json');
      expect(refused.body.error).toMatchObject({ code: 'organization.payment_required' });
      await fake.waitForClientAbort(0);
      expect(await cancelledCalls()).toBe(cancelledBefore + 1);
      const { debits, holds } = await ledgerOf(accountId);
      expect(debits).toHaveLength(billedBefore);
      expect(holds).toEqual([{ operation_key: 'elsewhere', amount: expect.anything() }]);
      await app.runtime.deps.ledger.release(accountId, 'elsewhere');
      // The refusal was seen: the next request holds first again, and answers.
      expect((await chat(key, body('after'))).status).toBe(200);
    }
  });

  it('a hold placed lower than the call started with aborts it and calls again with the cap the hold pays, billed once', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1_000_000 });
    expect((await chat(key, body('warm'))).status).toBe(200);
    fake.reset();
    fake.script({ hang: true }, { text: 'a shorter answer' });

    const lowered = await whileLocked(
      accountId,
      () => chat(key, body('lowered')),
      async (trx) => {
        await fake.waitForRequests(1);
        // 100 kopecks left: enough for the input and about 6,000 output tokens, not for the 32,768 asked.
        await holdElsewhere(trx, accountId, 100);
      },
    );
    expect(lowered.status).toBe(200);
    expect(lowered.body.choices[0].message.content).toBe('a shorter answer');
    await fake.waitForClientAbort(0);
    expect(fake.requests).toHaveLength(2);
    const [ahead, again] = fake.requests.map((request) => request.body.max_output_tokens as number);
    expect(ahead).toBe(32_768);
    expect(again).toBeLessThan(6_300);
    expect(again).toBeGreaterThan(5_000);
    const { debits, holds } = await ledgerOf(accountId);
    expect(debits).toHaveLength(2);
    expect(holds).toEqual([{ operation_key: 'elsewhere', amount: expect.anything() }]);
    await app.runtime.deps.ledger.release(accountId, 'elsewhere');
  });
});
