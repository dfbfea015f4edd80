import { sql } from 'kysely';
import { debitsOf, pollUntil } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { answer, startReceiver, type Receiver } from '../webhooks/receiver';

const DAY = 24 * 3600;
const nowSeconds = () => Math.floor(Date.now() / 1000);

type Figures = { amount: number; transactions: number; prompt_tokens: number; completion_tokens: number };
type Debit = Awaited<ReturnType<typeof debitsOf>>[number];

/** The usage groups computed here from the ledger rows, independently of the SQL under test. */
function expectedGroups(debits: Debit[], keyOf: (debit: Debit) => string): Map<string, Figures> {
  const groups = new Map<string, Figures>();
  for (const debit of debits) {
    const key = keyOf(debit);
    const group = groups.get(key) ?? { amount: 0, transactions: 0, prompt_tokens: 0, completion_tokens: 0 };
    group.amount += debit.amount;
    group.transactions += 1;
    group.prompt_tokens += debit.usage?.prompt_tokens ?? 0;
    group.completion_tokens += debit.usage?.completion_tokens ?? 0;
    groups.set(key, group);
  }
  return groups;
}
const stringOr = (value: unknown, fallback: string) => (typeof value === 'string' ? value : fallback);

describe('organization: usage and filtered transactions', () => {
  let app: TestApp;
  let account: { key: string; accountId: string };
  /** The three Responses billed in beforeAll, as their replies said. */
  const responses: any[] = [];
  beforeAll(async () => {
    app = await TestApp.start();
    account = await app.createAccount({ balance: 1_000_000 });
    const { key } = account;
    for (const input of ['/words 10', '/words 25', 'three words here']) {
      const reply = await app.request('POST', '/v2/responses', {
        key,
        body: { model: 'dev-echo', input, background: false },
      });
      expect(reply.body.status).toBe('completed');
      responses.push(reply.body);
    }
    expect(
      (
        await app.request('POST', '/v2/chat/completions', {
          key,
          body: { model: 'dev-echo', messages: [{ role: 'user', content: '/words 40' }] },
        })
      ).status,
    ).toBe(200);
    expect(
      (await app.request('POST', '/v2/embeddings', { key, body: { model: 'dev-embed', input: 'some words to embed' } }))
        .status,
    ).toBe(200);
    const { ledger } = app.runtime.deps;
    // No model or service named (or not as text): `none` and `other`, as the metrics label them.
    await ledger.debit({
      accountId: account.accountId,
      cost: '5',
      operationKey: 'test:bare',
      metadata: { source: 'test' },
    });
    await ledger.debit({
      accountId: account.accountId,
      cost: '3',
      operationKey: 'test:odd',
      metadata: { source: 'test', model: 7, service: { name: 'x' } },
    });
    // Credits are not spending.
    await ledger.credit({ accountId: account.accountId, amount: 777, metadata: { source: 'admin' } });
  });
  afterAll(() => app.close());

  const usage = (query = '') => app.request('GET', `/v2/organization/usage${query}`, { key: account.key });

  it('sums the debits by service and by model, in SQL, most spent first', async () => {
    const debits = await debitsOf(app, account.accountId);
    expect(debits).toHaveLength(7);
    for (const [groupBy, keyOf] of [
      ['service', (debit: Debit) => stringOr(debit.metadata.service, 'other')],
      ['model', (debit: Debit) => stringOr(debit.metadata.model, 'none')],
    ] as const) {
      const reply = await usage(`?group_by=${groupBy}`);
      expect(reply.status).toBe(200);
      const expected = [...expectedGroups(debits, keyOf)].map(([key, figures]) => ({ key, ...figures }));
      expected.sort((a, b) => b.amount - a.amount || a.key.localeCompare(b.key));
      expect(reply.body.data).toEqual(expected);
      expect(reply.body).toMatchObject({ object: 'organization.usage', group_by: groupBy, currency: 'RUB' });
    }

    const byService = (await usage('?group_by=service')).body;
    const billed = byService.data.find((group: any) => group.key === 'responses');
    expect(billed).toEqual({
      key: 'responses',
      amount: debits
        .filter((debit) => debit.metadata.service === 'responses')
        .reduce((sum, debit) => sum + debit.amount, 0),
      transactions: 3,
      prompt_tokens: responses.reduce((sum, response) => sum + response.usage.input_tokens, 0),
      completion_tokens: responses.reduce((sum, response) => sum + response.usage.output_tokens, 0),
    });
    // Each Response's debit records its exact cost (its whole kopecks depend on the account's carry).
    expect(responses.map((response) => response.usage.cost).sort()).toEqual(
      debits
        .filter((debit) => debit.metadata.service === 'responses')
        .map((debit) => debit.metadata.cost)
        .sort(),
    );
    expect(byService.data.map((group: any) => group.key).sort()).toEqual(['chat', 'embeddings', 'other', 'responses']);
    expect(byService.data.find((group: any) => group.key === 'other')).toEqual({
      key: 'other',
      amount: 8,
      transactions: 2,
      prompt_tokens: 0,
      completion_tokens: 0,
    });
    const byModel = (await usage('?group_by=model')).body;
    expect(byModel.data.find((group: any) => group.key === 'none')).toMatchObject({ amount: 8, transactions: 2 });
    expect(byModel.data.find((group: any) => group.key === 'dev-echo')).toMatchObject({ transactions: 4 });

    // The total is the sum of the debits; the balance moved by exactly that.
    const spent = debits.reduce((sum, debit) => sum + debit.amount, 0);
    expect(byService.total).toEqual({
      amount: spent,
      transactions: 7,
      prompt_tokens: debits.reduce((sum, debit) => sum + (debit.usage?.prompt_tokens ?? 0), 0),
      completion_tokens: debits.reduce((sum, debit) => sum + (debit.usage?.completion_tokens ?? 0), 0),
    });
    expect(byModel.total).toEqual(byService.total);
    expect((await app.request('GET', '/v2/organization/balance', { key: account.key })).body.balance).toBe(
      1_000_000 + 777 - spent,
    );
  });

  it('groups by UTC day by default, over the last 30 days, both ends of the range included', async () => {
    const before = nowSeconds();
    const reply = await usage();
    expect(reply.status).toBe(200);
    expect(reply.body.group_by).toBe('day');
    expect(reply.body.to).toBeGreaterThanOrEqual(before);
    expect(reply.body.to).toBeLessThanOrEqual(nowSeconds());
    expect(reply.body.to - reply.body.from).toBe(30 * DAY);
    const debits = await debitsOf(app, account.accountId);
    const today = [...expectedGroups(debits, (debit) => debit.created_at.toISOString().slice(0, 10))].map(
      ([key, figures]) => ({ key, ...figures }),
    );
    expect(reply.body.data).toEqual(today);

    // Two debits moved into the past, either side of a UTC midnight.
    const midnight = Math.floor(nowSeconds() / DAY) * DAY - 40 * DAY;
    const { ledger } = app.runtime.deps;
    const late = await ledger.debit({
      accountId: account.accountId,
      cost: '11',
      operationKey: 'test:late',
      metadata: { service: 'chat', model: 'dev-echo' },
      usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 },
    });
    const early = await ledger.debit({
      accountId: account.accountId,
      cost: '13',
      operationKey: 'test:early',
      metadata: { service: 'chat', model: 'dev-echo' },
    });
    // created_at is the database's own (never written by the app): moved here by hand.
    const moveTo = (id: string, at: Date) =>
      sql`update ledger_transactions set created_at = ${at.toISOString()}::timestamptz where id = ${id}`.execute(
        app.db,
      );
    await moveTo(late!.id, new Date((midnight - 1) * 1000 + 500));
    await moveTo(early!.id, new Date(midnight * 1000 + 700));
    const dayOf = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);

    const past = await usage(`?from=${midnight - DAY}&to=${midnight + DAY}`);
    expect(past.body).toEqual({
      object: 'organization.usage',
      from: midnight - DAY,
      to: midnight + DAY,
      group_by: 'day',
      currency: 'RUB',
      data: [
        { key: dayOf(midnight - 1), amount: 11, transactions: 1, prompt_tokens: 2, completion_tokens: 3 },
        { key: dayOf(midnight), amount: 13, transactions: 1, prompt_tokens: 0, completion_tokens: 0 },
      ],
      total: { amount: 24, transactions: 2, prompt_tokens: 2, completion_tokens: 3 },
    });
    // A debit at hh:mm:ss.7 is within `to` = hh:mm:ss, and within `from` = hh:mm:ss.
    const amounts = async (query: string) => (await usage(query)).body.data.map((group: any) => group.amount);
    expect(await amounts(`?from=${midnight - 100}&to=${midnight}`)).toEqual([11, 13]);
    expect(await amounts(`?from=${midnight}&to=${midnight + 100}`)).toEqual([13]);
    expect(await amounts(`?from=${midnight - 100}&to=${midnight - 1}`)).toEqual([11]);
    expect(await amounts(`?from=${midnight + 1}&to=${midnight + 100}`)).toEqual([]);
    // The default range leaves them out; without `from`, it is 30 days before `to`.
    expect((await usage()).body.data).toEqual(today);
    const fromTo = await usage(`?to=${midnight + DAY}&group_by=service`);
    expect(fromTo.body).toMatchObject({
      from: midnight - 29 * DAY,
      to: midnight + DAY,
      data: [{ key: 'chat', amount: 24, transactions: 2 }],
    });
  });

  it('refuses a range that is empty, reversed or longer than 366 days, and unknown parameters', async () => {
    const now = nowSeconds();
    expect((await usage(`?from=${now - 366 * DAY}&to=${now}`)).status).toBe(200);
    const cases: Array<[string, RegExp]> = [
      [`?from=${now}&to=${now}`, /from .* must be before to/],
      [`?from=${now}&to=${now - 10}`, /from .* must be before to/],
      [`?from=${now + 3600}`, /from .* must be before to/],
      [`?from=${now - 366 * DAY - 1}&to=${now}`, /366 days/],
      [`?from=${now - 400 * DAY}`, /366 days/],
      ['?from=abc', /from/],
      ['?to=1.5', /to/],
      ['?from=-5', /from/],
      ['?group_by=week', /group_by/],
      ['?groupby=model', /groupby/],
      ['?from=1&from=2', /from/],
    ];
    for (const [query, message] of cases) {
      const reply = await usage(query);
      expect([query, reply.status, reply.body.error?.code]).toEqual([query, 400, 'organization.invalid_request']);
      expect(reply.body.error.message).toMatch(message);
    }
  });

  it('filters transactions by service and model, with after_id paging', async () => {
    const list = async (query: string) => {
      const reply = await app.request('GET', `/v2/organization/transactions?${query}`, { key: account.key });
      expect([query, reply.status]).toEqual([query, 200]);
      return reply.body.transactions as any[];
    };
    const responsesOnly = await list('limit=200&service=responses');
    expect(responsesOnly.map((entry) => entry.metadata.response_id)).toEqual(
      responses.map((response) => response.id).reverse(),
    );
    expect((await list('limit=200&model=dev-embed')).map((entry) => entry.metadata.service)).toEqual(['embeddings']);
    expect(
      (await list('limit=200&service=chat&model=dev-echo')).every(
        (entry) => entry.metadata.service === 'chat' && entry.metadata.model === 'dev-echo',
      ),
    ).toBe(true);
    expect(await list('limit=200&service=responses&model=dev-embed')).toEqual([]);
    expect(await list('limit=200&service=nothing')).toEqual([]);
    // A credit names no service: never in a filtered list.
    expect((await list('limit=200&service=admin')).length).toBe(0);

    const paged: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await list(`limit=1&service=responses${after ? `&after_id=${after}` : ''}`);
      if (page.length === 0) break;
      paged.push(page[0].id);
      after = page[0].id;
    }
    expect(paged).toEqual(responsesOnly.map((entry) => entry.id));
    const empty = await app.request('GET', '/v2/organization/transactions?limit=5&service=', { key: account.key });
    expect(empty.status).toBe(400);
  });
});

describe('organization: Responses and Runs of the account', () => {
  let app: TestApp;
  let receiver: Receiver;
  let mine: { key: string; accountId: string };
  let theirs: { key: string; accountId: string };
  /** Responses of `mine`, oldest first: completed, failed, completed in a conversation, deleted, completed with a webhook. */
  const ids: Record<'first' | 'failed' | 'linked' | 'deleted' | 'hooked' | 'refusedHook', string> = {} as never;
  let conversationId: string;

  beforeAll(async () => {
    app = await TestApp.start();
    receiver = await startReceiver((request, response) =>
      answer(request.path.includes('fail') ? 500 : 200)(request, response),
    );
    mine = await app.createAccount();
    theirs = await app.createAccount();
    const create = async (body: Record<string, unknown>) => {
      const reply = await app.request('POST', '/v2/responses', {
        key: mine.key,
        body: { model: 'dev-echo', background: false, ...body },
      });
      expect(reply.status).toBe(200);
      return reply.body.id as string;
    };
    ids.first = await create({ input: 'first' });
    ids.failed = await create({ input: '/error' });
    conversationId = (await app.request('POST', '/v2/conversations', { key: mine.key, body: {} })).body.id;
    ids.linked = await create({ input: 'in a conversation', conversation: conversationId });
    ids.deleted = await create({ input: 'to delete' });
    expect((await app.request('DELETE', `/v2/responses/${ids.deleted}`, { key: mine.key })).status).toBe(200);
    ids.hooked = await create({ input: 'notify', background: true, metadata: { webhook_url: `${receiver.url}/hook` } });
    ids.refusedHook = await create({
      input: 'notify badly',
      background: true,
      metadata: { webhook_url: `${receiver.url}/fail` },
    });
    // Another account's Response, made in between.
    await app.request('POST', '/v2/responses', {
      key: theirs.key,
      body: { model: 'dev-echo', input: 'theirs', background: false },
    });
  });
  afterAll(async () => {
    await app.close();
    await receiver.close();
  });

  const summary = (id: string, key = mine.key) => app.request('GET', `/v2/organization/responses/${id}`, { key });
  const list = (path: string, key = mine.key) => app.request('GET', path, { key });

  it('summarises a Response with its webhook outcome', async () => {
    const hooked = await pollUntil(
      () => summary(ids.hooked),
      (reply) => reply.body.webhook?.status === 'delivered',
    );
    expect(hooked.body.webhook).toEqual({
      status: 'delivered',
      response_status: 200,
      error: null,
      attempted_at: expect.any(Number),
    });
    const refused = await pollUntil(
      () => summary(ids.refusedHook),
      (reply) => reply.body.webhook !== null && reply.body.webhook.status !== 'pending',
    );
    expect(refused.body.webhook).toMatchObject({ status: 'failed', response_status: 500 });

    const full = (await app.request('GET', `/v2/responses/${ids.linked}`, { key: mine.key })).body;
    const linked = await summary(ids.linked);
    expect(linked.status).toBe(200);
    expect(linked.body).toEqual({
      id: ids.linked,
      object: 'response.summary',
      status: 'completed',
      model: 'dev-echo',
      vendor: 'dev',
      background: false,
      conversation_id: conversationId,
      created_at: full.created_at,
      started_at: expect.any(Number),
      completed_at: full.completed_at,
      duration_ms: expect.any(Number),
      // The summary's usage is the counts and the cost, without the Response's OpenAI token details.
      usage: {
        input_tokens: full.usage.input_tokens,
        output_tokens: full.usage.output_tokens,
        total_tokens: full.usage.total_tokens,
        cost: full.usage.cost,
      },
      error: null,
      webhook: null,
    });
    expect(linked.body.duration_ms).toBeGreaterThanOrEqual(0);
    expect(linked.body.duration_ms).toBeLessThanOrEqual((full.completed_at - full.created_at + 1) * 1000);

    const failed = (await summary(ids.failed)).body;
    expect(failed).toMatchObject({
      status: 'failed',
      conversation_id: null,
      error: { code: 'response.execution_failed', message: expect.any(String) },
    });
  });

  it("lists the account's Responses newest first, without deleted ones, by status, in pages", async () => {
    const all = await list('/v2/organization/responses');
    expect(all.status).toBe(200);
    const expected = [ids.refusedHook, ids.hooked, ids.linked, ids.failed, ids.first];
    expect(all.body).toMatchObject({ object: 'list', first_id: ids.refusedHook, last_id: ids.first, has_more: false });
    expect(all.body.data.map((entry: any) => entry.id)).toEqual(expected);
    expect(all.body.data.find((entry: any) => entry.id === ids.hooked).webhook).toMatchObject({ status: 'delivered' });
    expect(all.body.data.find((entry: any) => entry.id === ids.linked)).toEqual((await summary(ids.linked)).body);

    expect((await list('/v2/organization/responses?status=failed')).body.data.map((entry: any) => entry.id)).toEqual([
      ids.failed,
    ]);
    expect((await list('/v2/organization/responses?status=queued')).body.data).toEqual([]);

    const first = (await list('/v2/organization/responses?limit=2')).body;
    expect(first).toMatchObject({ first_id: ids.refusedHook, last_id: ids.hooked, has_more: true });
    const second = (await list(`/v2/organization/responses?limit=2&after=${first.last_id}`)).body;
    expect(second.data.map((entry: any) => entry.id)).toEqual([ids.linked, ids.failed]);
    expect(second.has_more).toBe(true);
    const third = (await list(`/v2/organization/responses?limit=2&after=${second.last_id}`)).body;
    expect(third).toMatchObject({ first_id: ids.first, last_id: ids.first, has_more: false });
    const past = (await list(`/v2/organization/responses?limit=2&after=${ids.first}`)).body;
    expect(past).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });

    const completed: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 10; page++) {
      const reply = (await list(`/v2/organization/responses?status=completed&limit=1${after ? `&after=${after}` : ''}`))
        .body;
      completed.push(...reply.data.map((entry: any) => entry.id));
      if (!reply.has_more) break;
      after = reply.last_id;
    }
    expect(completed).toEqual([ids.refusedHook, ids.hooked, ids.linked, ids.first]);
    // A deleted Response still works as a cursor (it was the account's), and is not listed.
    expect(
      (await list(`/v2/organization/responses?after=${ids.deleted}`)).body.data.map((entry: any) => entry.id),
    ).toEqual([ids.linked, ids.failed, ids.first]);
  });

  it("keeps accounts apart: another account's Responses are neither listed, nor found, nor a cursor", async () => {
    const theirList = (await list('/v2/organization/responses', theirs.key)).body;
    expect(theirList.data).toHaveLength(1);
    expect(theirList.data[0].id).not.toBe(ids.first);
    const foreign = await summary(ids.first, theirs.key);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toEqual({ code: 'response.not_found', message: `No response with id ${ids.first}.` });
    const deleted = await summary(ids.deleted);
    expect(deleted.status).toBe(404);
    expect(deleted.body.error.code).toBe('response.not_found');
    const cursor = await list(`/v2/organization/responses?after=${ids.first}`, theirs.key);
    expect(cursor.status).toBe(400);
    expect(cursor.body.error).toEqual({
      code: 'organization.invalid_request',
      message: expect.stringMatching(/after/),
    });
    expect((await list(`/v2/organization/responses?after=${theirList.data[0].id}`)).status).toBe(400);
  });

  it('validates the list query', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'status=done', 'after=', 'order=asc', 'limit=1&limit=2']) {
      for (const path of ['/v2/organization/responses', '/v2/organization/runs']) {
        const reply = await list(`${path}?${query}`);
        expect([path, query, reply.status, reply.body.error?.code]).toEqual([
          path,
          query,
          400,
          'organization.invalid_request',
        ]);
      }
    }
    expect((await list('/v2/organization/responses?limit=100&status=cancelled')).status).toBe(200);
    expect((await list('/v2/organization/runs?status=requires_action')).status).toBe(200);
  });

  it("lists the account's Runs across threads, newest first, by status, in pages", async () => {
    const call = (method: string, path: string, body?: unknown, key = mine.key) =>
      app.request(method, path, { key, body });
    const assistantId = (await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'Echo' })).body.id as number;
    const startRun = async (text: string, key = mine.key) => {
      const agent =
        key === mine.key
          ? assistantId
          : (await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'Theirs' }, key)).body.id;
      const thread = (await call('POST', '/v2/threads', { messages: [{ role: 'user', content: text }] }, key)).body
        .id as string;
      const created = await call('POST', `/v2/threads/${thread}/runs`, { assistant_id: agent }, key);
      expect([created.status, created.body.error]).toEqual([200, undefined]);
      const run = created.body;
      const ended = await pollUntil(
        () => call('GET', `/v2/threads/${thread}/runs/${run.id}`, undefined, key),
        (reply) => ['completed', 'failed', 'incomplete', 'cancelled', 'expired'].includes(reply.body.status),
        15_000,
      );
      return ended.body;
    };
    const first = await startRun('hello runs');
    const failed = await startRun('/error bad_request');
    await startRun('theirs', theirs.key);
    const third = await startRun('/words 5');
    expect([first.status, failed.status, third.status]).toEqual(['completed', 'failed', 'completed']);

    const all = (await list('/v2/organization/runs')).body;
    expect(all).toMatchObject({ object: 'list', first_id: third.id, last_id: first.id, has_more: false });
    expect(all.data.map((entry: any) => entry.id)).toEqual([third.id, failed.id, first.id]);
    expect(all.data[2]).toEqual({
      id: first.id,
      object: 'thread.run.summary',
      thread_id: first.thread_id,
      assistant_id: assistantId,
      status: 'completed',
      model: 'dev-echo',
      created_at: first.created_at,
      completed_at: first.completed_at,
      duration_ms: expect.any(Number),
      usage: first.usage,
      last_error: null,
    });
    expect(first.usage).toEqual({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
      total_tokens: expect.any(Number),
      cost: expect.any(Number),
    });
    // A failed Run ended when it failed.
    expect(all.data[1]).toMatchObject({
      status: 'failed',
      completed_at: failed.failed_at,
      last_error: failed.last_error,
      duration_ms: expect.any(Number),
    });
    expect(failed.last_error).toEqual({ code: expect.any(String), message: expect.any(String) });

    expect((await list('/v2/organization/runs?status=failed')).body.data.map((entry: any) => entry.id)).toEqual([
      failed.id,
    ]);
    const page = (await list('/v2/organization/runs?status=completed&limit=1')).body;
    expect(page).toMatchObject({ first_id: third.id, has_more: true });
    const next = (await list(`/v2/organization/runs?status=completed&limit=1&after=${page.last_id}`)).body;
    expect(next).toMatchObject({ first_id: first.id, has_more: false });

    // The other account sees its one Run; ours is not a cursor for it.
    const theirRuns = (await list('/v2/organization/runs', theirs.key)).body;
    expect(theirRuns.data).toHaveLength(1);
    expect(theirRuns.data[0].id).not.toBe(first.id);
    const cursor = await list(`/v2/organization/runs?after=${first.id}`, theirs.key);
    expect(cursor.status).toBe(400);
    expect(cursor.body.error.code).toBe('organization.invalid_request');
  });
});
