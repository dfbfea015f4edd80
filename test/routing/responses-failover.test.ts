import { newId } from '../../src/ids';
import type { FakeVendorServer } from '../fakes';
import { itOnEmbeddedEngine, type TestApp } from '../support/harness';
import { outputText, storedRequest, waitForFinal } from '../responses/helpers';
import { resumeAfterFailover, useRouteSuite } from './route-catalog';

/** Responses to a route: failover before the first token as recorded steps of the job, billed once at the server. */
describe('Responses to a route', () => {
  const suite = useRouteSuite();
  let app: TestApp;
  let openai: FakeVendorServer;
  let anthropic: FakeVendorServer;
  let key: string;
  let accountId: string;
  beforeEach(() => ({ app, openai, anthropic, key, accountId } = suite));

  const debitsOf = (responseId: string) =>
    app.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('operation_key', '=', `response:${responseId}`)
      .where('type', '=', 'debit')
      .execute();
  const claudeCost = (input: number, output: number) => {
    const price = app.runtime.deps.catalog.getModel('claude-haiku-4-5')!.price!;
    return (input * price.input + output * price.output) / price.count;
  };

  it.each([
    ['HTTP 503', { status: 503 }],
    ['HTTP 429', { status: 429, retryAfter: '20' }],
    ['a reset connection', { resetConnection: true }],
  ])('moves on after %s and shows and bills the model that served', async (_name, fault) => {
    openai.script(fault);
    anthropic.script({ text: 'from claude', usage: { inputTokens: 10, outputTokens: 4 } });
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'pair', input: 'hello', background: false },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: 'completed', model: 'claude-haiku-4-5' });
    expect(reply.body.output[0].content[0].text).toBe('from claude');
    expect(openai.requests).toHaveLength(1);
    expect(anthropic.requests).toHaveLength(1);
    const stored = await app.request('GET', `/v2/responses/${reply.body.id}`, { key });
    expect(stored.body.model).toBe('claude-haiku-4-5');
    const debits = await debitsOf(reply.body.id);
    expect(debits).toHaveLength(1);
    expect(Number(debits[0].cost)).toBeCloseTo(claudeCost(10, 4), 10);
    expect(debits[0].metadata).toMatchObject({ route: 'pair', model: 'claude-haiku-4-5', vendor: 'anthropic' });
  });

  it('does not move on after a request the vendor refuses (400)', async () => {
    openai.script({ status: 400, errorMessage: 'bad input' });
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'pair', input: 'hello', background: false },
    });
    expect(reply.body).toMatchObject({ status: 'failed', model: 'gpt-5-mini' });
    expect(reply.body.error.code).toBe('response.invalid_request');
    expect(anthropic.requests).toHaveLength(0);
  });

  it('after output began, continues on a next target that continues replies, from the text already streamed', async () => {
    openai.script({ text: 'one two three four', textChunks: ['one', ' two', ' three', ' four'], dropAfterDeltas: 2 });
    anthropic.script({ text: ' three four', textChunks: [' three', ' four'] });
    const created = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'pair', input: 'count to four', background: true },
    });
    const final = await waitForFinal(app, key, created.body.id);
    expect(final).toMatchObject({ status: 'completed', model: 'claude-haiku-4-5' });
    expect(outputText(final)).toBe('one two three four');
    // Claude was given the reply so far to continue (its prefill).
    expect(anthropic.requests[0].body.messages.at(-1)).toMatchObject({ role: 'assistant' });
    expect(JSON.stringify(anthropic.requests[0].body.messages.at(-1))).toContain('one two');
  });

  it('after output began, ends as a failed attempt would when the next target cannot continue the reply', async () => {
    anthropic.script({ text: 'one two three', textChunks: ['one', ' two', ' three'], dropAfterDeltas: 2 });
    const created = await app.request('POST', '/v2/responses', {
      key,
      body: { model: 'reversed', input: 'count to three', background: true },
    });
    const final = await waitForFinal(app, key, created.body.id);
    expect(final.status).toBe('failed');
    expect(openai.requests).toHaveLength(0);
  });

  itOnEmbeddedEngine(
    'after a crash between a failover and the answer, resumes on the next target without drawing again, billing once',
    async () => {
      const id = newId('resp');
      // State left by a process that died after recording the route's plan (step 1) and the failover from its first
      // target (step 2), before the second target answered.
      await app.db
        .insertInto('responses')
        .values({
          id,
          account_id: accountId,
          status: 'in_progress',
          background: true,
          model: 'pair',
          vendor: 'switchyard',
          request: JSON.stringify(storedRequest('hello there')),
          metadata: JSON.stringify({}),
          started_at: new Date(),
        })
        .execute();
      await app.db
        .insertInto('stream_events')
        .values(
          [0, 1].map((sequence) => ({
            stream_id: id,
            first_seq: sequence,
            last_seq: sequence,
            events: JSON.stringify([
              {
                type: sequence === 0 ? 'response.created' : 'response.in_progress',
                sequence_number: sequence,
                response: { id, status: sequence === 0 ? 'queued' : 'in_progress' },
              },
            ]),
          })),
        )
        .execute();
      anthropic.script({ text: 'resumed on claude', usage: { inputTokens: 3, outputTokens: 3 } });
      expect(await resumeAfterFailover(app, id, 'response')).toBe('completed');
      // The failed target is not tried again; the recorded plan is not drawn again.
      expect(openai.requests).toHaveLength(0);
      expect(anthropic.requests).toHaveLength(1);
      const row = await app.db
        .selectFrom('responses')
        .select(['status', 'model', 'vendor'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ status: 'completed', model: 'claude-haiku-4-5', vendor: 'anthropic' });
      const debits = await debitsOf(id);
      expect(debits).toHaveLength(1);
      expect(Number(debits[0].cost)).toBeCloseTo(claudeCost(3, 3), 10);
      expect(debits[0].metadata).toMatchObject({ route: 'pair', model: 'claude-haiku-4-5', vendor: 'anthropic' });
    },
  );
});
