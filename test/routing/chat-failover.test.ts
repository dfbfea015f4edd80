import type { FakeVendorServer } from '../fakes';
import type { FakeScript } from '../fakes/fake-script';
import type { TestApp } from '../support/harness';
import { useRouteSuite } from './route-catalog';

/** Chat completions (v2, v1 and /openai/v1 share the chat service) to a route: failover before the first token. */
describe('chat completions to a route', () => {
  const suite = useRouteSuite({ PROVIDER_TIMEOUT_MS: '500' });
  let app: TestApp;
  let openai: FakeVendorServer;
  let anthropic: FakeVendorServer;
  let key: string;
  let accountId: string;
  beforeEach(() => ({ app, openai, anthropic, key, accountId } = suite));

  const lastDebit = () =>
    app.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('type', '=', 'debit')
      .orderBy('seq', 'desc')
      .executeTakeFirstOrThrow();
  const debitCount = async () =>
    (
      await app.db
        .selectFrom('ledger_transactions')
        .select('id')
        .where('account_id', '=', accountId)
        .where('type', '=', 'debit')
        .execute()
    ).length;
  const ask = (stream = false) =>
    app.request('POST', '/openai/v1/chat/completions', {
      key,
      body: { model: 'pair', stream, messages: [{ role: 'user', content: 'hello' }] },
    });

  const retryable: [string, FakeScript][] = [
    ['HTTP 500', { status: 500 }],
    ['HTTP 503', { status: 503 }],
    ['HTTP 429 with a long Retry-After', { status: 429, retryAfter: '20' }],
    ['an overloaded vendor (529)', { status: 529 }],
    ['a reset connection', { resetConnection: true }],
    ['a timeout', { hang: true }],
  ];

  it.each(retryable)('moves on at once after %s, billing once at the target that served', async (_name, fault) => {
    openai.script(fault);
    anthropic.script({ text: 'from claude', usage: { inputTokens: 10, outputTokens: 4 } });
    const before = await app.runtime.deps.metrics.registry.getSingleMetricAsString('switchyard_route_failovers_total');
    const debitsBefore = await debitCount();
    const reply = await ask();
    expect(reply.status).toBe(200);
    expect(reply.body.model).toBe('claude-haiku-4-5');
    expect(reply.body.choices[0].message.content).toBe('from claude');
    // No retry of the failed target: the next vendor is the retry.
    expect(openai.requests).toHaveLength(1);
    expect(anthropic.requests).toHaveLength(1);
    // One debit, at Claude's price.
    expect(await debitCount()).toBe(debitsBefore + 1);
    const debit = await lastDebit();
    const price = app.runtime.deps.catalog.getModel('claude-haiku-4-5')!.price!;
    expect(Number(debit.cost)).toBeCloseTo((10 * price.input + 4 * price.output) / price.count, 10);
    expect(debit.metadata).toMatchObject({ route: 'pair', model: 'claude-haiku-4-5', vendor: 'anthropic' });
    const after = await app.runtime.deps.metrics.registry.getSingleMetricAsString('switchyard_route_failovers_total');
    expect(after).not.toEqual(before);
    expect(after).toContain('route="pair"');
  });

  it('fails over a stream before its first token and names the serving model in its chunks', async () => {
    openai.script({ status: 503 });
    anthropic.script({ text: 'streamed from claude' });
    const reply = await ask(true);
    expect(reply.status).toBe(200);
    expect(String(reply.body)).toContain('"model":"claude-haiku-4-5"');
    expect(String(reply.body)).toContain('claude');
    expect(anthropic.requests).toHaveLength(1);
    expect((await lastDebit()).metadata).toMatchObject({ route: 'pair', model: 'claude-haiku-4-5' });
  });

  it('after output began, ends the stream as a failed one ends, without another target (api-decisions 35)', async () => {
    openai.script({ text: 'one two three four five', dropAfterDeltas: 2 });
    const debitsBefore = await debitCount();
    const reply = await ask(true);
    const body = String(reply.body);
    expect(body).toContain('"model":"gpt-5-mini"');
    expect(body).toMatch(/"error":\{/);
    expect(anthropic.requests).toHaveLength(0);
    // Nothing billed, nothing held: as a stream a model's vendor dropped (test/openai/openai-streams.test.ts).
    expect(await debitCount()).toBe(debitsBefore);
    const balance = (await app.request('GET', '/v2/organization/balance', { key })).body;
    expect(balance.available).toBe(balance.balance);
  });

  it.each([
    ['a request the vendor refuses (400)', { status: 400, errorMessage: 'bad input' } as FakeScript],
    ['credentials the vendor refuses (401)', { status: 401 } as FakeScript],
  ])('does not move on after %s', async (_name, fault) => {
    openai.script(fault);
    const reply = await ask();
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(anthropic.requests).toHaveLength(0);
  });

  it('does not move on after a content filter: that is an answer', async () => {
    openai.script({ text: '', finishReason: 'content_filter' });
    const reply = await ask();
    expect(reply.status).toBe(200);
    expect(reply.body.model).toBe('gpt-5-mini');
    expect(anthropic.requests).toHaveLength(0);
  });

  it('served by the first target, bills it', async () => {
    openai.script({ text: 'from gpt', usage: { inputTokens: 10, outputTokens: 4 } });
    const reply = await ask();
    expect(reply.body.model).toBe('gpt-5-mini');
    const debit = await lastDebit();
    expect(debit.metadata).toMatchObject({ route: 'pair', model: 'gpt-5-mini', vendor: 'openai', service: 'chat' });
  });
});
