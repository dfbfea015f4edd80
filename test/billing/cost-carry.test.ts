import { TestApp } from '../support/harness';
import { priceCall } from '../../src/billing/pricing';
import type { Price } from '../../src/catalog/catalog-types';

/**
 * Billing exact to the kopeck over time (api-decisions 10; issue 34): each debit is whole kopecks, the account
 * carries the fraction, so over any period an account's debits never exceed the exact sum of its costs by a
 * kopeck or more (and, the carry being paid ahead, never fall below it). A property test over random prices and
 * request sizes, debited concurrently (group-committed batches), under holds or not, with retries.
 */

/** Exact costs in 10⁻¹² kopeck, from the decimal strings the ledger stores. */
const UNIT = 10n ** 12n;
function units(decimal: string | number): bigint {
  const [whole, fraction = ''] = String(decimal).split('.');
  return BigInt(whole!) * UNIT + BigInt((fraction + '0'.repeat(12)).slice(0, 12));
}

/** A seeded generator (mulberry32), so a failure can be replayed with its seed. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return { next, int, pick: <T>(items: readonly T[]) => items[int(0, items.length - 1)]! };
}

type Random = ReturnType<typeof generator>;

/** A price as a catalog may have one: micro-kopeck precision, counts the catalog uses (60 is per-minute audio). */
function randomPrice(random: Random): Price {
  const rate = () => (random.next() < 0.1 ? 0 : random.int(1, 10 ** random.int(1, 9)) / 1_000_000);
  return { unit: 'tokens', count: random.pick([1, 60, 100, 1000, 1_000_000]), input: rate(), output: rate() };
}

/** Sizes from nothing to large, mostly small (where rounding each debit up cost the most). */
const randomSize = (random: Random) => (random.next() < 0.05 ? 0 : Math.floor(10 ** (random.next() * 5.3)));

describe('billing: exact to the kopeck over time (the carry)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
  });
  afterAll(() => app.close());

  /** The account's debits in ledger order, its carry and balance, and the check that the ledger adds up. */
  async function debitsOf(accountId: string) {
    const account = await app.db
      .selectFrom('accounts')
      .select(['balance', 'held', 'cost_carry'])
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    const rows = await app.db
      .selectFrom('ledger_transactions')
      .select(['type', 'amount', 'cost', 'operation_key', 'metadata', 'seq'])
      .where('account_id', '=', accountId)
      .orderBy('seq')
      .execute();
    const credits = rows.filter((row) => row.type === 'credit').reduce((sum, row) => sum + Number(row.amount), 0);
    const debits = rows.filter((row) => row.type === 'debit');
    expect(Number(account.balance)).toBe(credits - debits.reduce((sum, row) => sum + Number(row.amount), 0));
    return { account, debits };
  }

  /**
   * The invariant over every period: for each run of consecutive debits, whole kopecks debited minus exact costs is
   * below one kopeck (and, over the whole history, exactly the carry, in [0, 1)).
   */
  function expectExactOverEveryPeriod(debits: Array<{ amount: number | string; cost: string | null }>, carry: string) {
    const amounts = debits.map((row) => BigInt(row.amount) * UNIT);
    const costs = debits.map((row) => units(row.cost!));
    let worst = -UNIT;
    for (let start = 0; start < debits.length; start++) {
      let excess = 0n;
      for (let end = start; end < debits.length; end++) {
        excess += amounts[end]! - costs[end]!;
        if (excess > worst) worst = excess;
      }
    }
    expect(worst).toBeLessThan(UNIT);
    const total = amounts.reduce((a, b) => a + b, 0n) - costs.reduce((a, b) => a + b, 0n);
    expect(total).toBe(units(carry));
    expect(total >= 0n && total < UNIT).toBe(true);
  }

  it('random prices and sizes, debited concurrently, under holds or not, retried: never a kopeck over the exact costs in any period', async () => {
    const seed = Number(process.env.CARRY_SEED ?? 34_2026);
    const random = generator(seed);
    const { ledger } = app.runtime.deps;
    const ACCOUNTS = 12;
    const ROUNDS = 10;
    const accounts = await Promise.all(
      Array.from({ length: ACCOUNTS }, () => app.createAccount({ balance: 1_000_000_000_000 })),
    );
    /** What each operation costs, as the test priced it (independently of the ledger). */
    const expected = new Map<string, { exact: string; amount: number }>();
    let operations = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const calls: Array<Promise<unknown>> = [];
      for (const { accountId } of accounts) {
        for (let index = random.int(1, 12); index > 0; index--) {
          const priced = priceCall(randomPrice(random), { input: randomSize(random), output: randomSize(random) });
          const operationKey = `prop:${round}:${operations++}`;
          expected.set(`${accountId}/${operationKey}`, priced);
          const debit = () =>
            ledger.debit({ accountId, cost: priced.exact, operationKey, metadata: { source: 'test' } });
          calls.push(
            random.next() < 0.5 && priced.amount > 0
              ? ledger.hold({ accountId, operationKey, amount: priced.amount }).then(debit)
              : debit(),
          );
          // A retried debit (the same operation) bills nothing more and carries nothing more.
          if (random.next() < 0.15) calls.push(debit().then(debit));
        }
      }
      await Promise.all(calls);
    }

    let debitCount = 0;
    for (const { accountId } of accounts) {
      const { account, debits } = await debitsOf(accountId);
      expect(Number(account.held)).toBe(0);
      const billed = [...expected].filter(
        ([key, priced]) => key.startsWith(`${accountId}/`) && units(priced.exact) > 0n,
      );
      expect(debits).toHaveLength(billed.length);
      for (const row of debits) {
        const priced = expected.get(`${accountId}/${row.operation_key}`)!;
        // Each debit records its exact cost, and is never more than that cost rounded up (what its hold holds).
        expect(units(row.cost!)).toBe(units(priced.exact));
        expect(row.metadata.cost).toBe(Number(priced.exact));
        expect(Number(row.amount)).toBeLessThanOrEqual(priced.amount);
      }
      expectExactOverEveryPeriod(debits, account.cost_carry);
      debitCount += debits.length;
    }
    // The property's size: some hundreds of debits over 12 accounts.
    expect(debitCount).toBeGreaterThan(ACCOUNTS * ROUNDS * 3);
  });

  it('through the API: Responses, chat completions and embeddings of random sizes debit the exact sum of their usage.cost, rounded up once', async () => {
    const random = generator(Number(process.env.CARRY_SEED ?? 34_2026) + 1);
    const { key, accountId } = await app.createAccount({ balance: 100_000 });
    const requests = Array.from({ length: 60 }, (_, index) => {
      const words = Array.from({ length: random.int(0, 12) }, (_, word) => `w${word}`).join(' ');
      switch (index % 3) {
        case 0:
          return app.request('POST', '/v2/responses', {
            key,
            body: { model: 'dev-echo', input: `/words ${random.int(1, 40)} ${words}`, background: false },
          });
        case 1:
          return app.request('POST', '/v2/chat/completions', {
            key,
            body: { model: 'dev-echo', messages: [{ role: 'user', content: `/words ${random.int(1, 40)}` }] },
          });
        default:
          return app.request('POST', '/v2/embeddings', { key, body: { model: 'dev-embed', input: `${words} x` } });
      }
    });
    const replies = await Promise.all(requests);
    expect(replies.map((reply) => reply.status)).toEqual(Array(60).fill(200));
    const { account, debits } = await debitsOf(accountId);
    expect(debits).toHaveLength(60);
    const embedPrice = app.runtime.deps.catalog.getModel('dev-embed')!.price!;
    const costs = replies.map((reply, index) =>
      index % 3 === 2
        ? priceCall(embedPrice, { input: reply.body.usage.prompt_tokens, output: 0 }).exact
        : String(reply.body.usage.cost),
    );
    const exact = costs.reduce((sum, cost) => sum + units(cost), 0n);
    expect(debits.reduce((sum, row) => sum + units(row.cost!), 0n)).toBe(exact);
    // A fresh account's carry starts at 0: its debits are the exact sum rounded up, once.
    const debited = debits.reduce((sum, row) => sum + BigInt(row.amount), 0n);
    expect(debited).toBe((exact + UNIT - 1n) / UNIT);
    expectExactOverEveryPeriod(debits, account.cost_carry);
  });

  it('the audit\'s case: "alpha beta gamma" costs 0.9 kopeck; ten of them are debited 9 kopecks, not 10, each recording its cost', async () => {
    const { key, accountId } = await app.createAccount({ balance: 1_000 });
    for (let index = 0; index < 10; index++) {
      const reply = await app.request('POST', '/v2/responses', {
        key,
        body: { model: 'dev-echo', input: 'alpha beta gamma', background: false },
      });
      expect(reply.status).toBe(200);
      expect(reply.body.usage.cost).toBe(0.9);
    }
    const { account, debits } = await debitsOf(accountId);
    expect(debits.map((row) => Number(row.amount))).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    expect(debits.map((row) => row.metadata.cost)).toEqual(Array(10).fill(0.9));
    expect(Number(account.balance)).toBe(991);
    expect(Number(account.cost_carry)).toBe(0);
    // The transactions list shows each debit, the one the carry paid as 0 kopecks, with its exact cost.
    const listed = await app.request('GET', '/v2/organization/transactions?limit=20', { key });
    expect(
      listed.body.transactions
        .filter((row: any) => row.type === 'debit')
        .map((row: any) => [row.amount, row.metadata.cost]),
    ).toEqual([
      [0, 0.9],
      [1, 0.9],
      [1, 0.9],
      [1, 0.9],
      [1, 0.9],
      [1, 0.9],
      [1, 0.9],
      [1, 0.9],
      [1, 0.9],
      [1, 0.9],
    ]);
  });
});
