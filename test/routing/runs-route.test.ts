import { newId } from '../../src/ids';
import { debitsOf, pollUntil } from '../responses/helpers';
import type { FakeVendorServer } from '../fakes';
import { itOnEmbeddedEngine, type TestApp } from '../support/harness';
import { resumeAfterFailover, useRouteSuite } from './route-catalog';

/** A Run on a route (api-decisions 32): its model call fails over like chat's; each round billed at its server. */
describe('Runs on a route', () => {
  const suite = useRouteSuite();
  let app: TestApp;
  let openai: FakeVendorServer;
  let anthropic: FakeVendorServer;
  let key: string;
  let accountId: string;
  beforeEach(() => ({ app, openai, anthropic, key, accountId } = suite));

  /** A Run of an Assistant on the route, to its end. */
  async function runOnRoute() {
    const assistant = await app.request('POST', '/v2/assistants', { key, body: { model: 'pair', name: 'Routed' } });
    expect(assistant.status).toBe(200);
    expect(assistant.body.model).toBe('pair');
    const thread = await app.request('POST', '/v2/threads', {
      key,
      body: { messages: [{ role: 'user', content: 'hello' }] },
    });
    const created = await app.request('POST', `/v2/threads/${thread.body.id}/runs`, {
      key,
      body: { assistant_id: assistant.body.id },
    });
    expect(created.status).toBe(200);
    return pollUntil(
      async () => (await app.request('GET', `/v2/threads/${thread.body.id}/runs/${created.body.id}`, { key })).body,
      (current) => ['completed', 'failed', 'incomplete', 'cancelled', 'expired'].includes(current.status),
      15_000,
    );
  }
  const debitsOfRun = async (runId: string) =>
    (await debitsOf(app, accountId)).filter((debit) => (debit.metadata as { run_id?: string }).run_id === runId);
  /** One debit for the Run, at Claude's price, naming the route. */
  async function expectBilledOnceAtClaude(runId: string, inputTokens: number, outputTokens: number) {
    const debits = await debitsOfRun(runId);
    expect(debits).toHaveLength(1);
    expect(debits[0].metadata).toMatchObject({ route: 'pair', model: 'claude-haiku-4-5', vendor: 'anthropic' });
    const price = app.runtime.deps.catalog.getModel('claude-haiku-4-5')!.price!;
    expect(Number(debits[0].cost)).toBeCloseTo(
      (inputTokens * price.input + outputTokens * price.output) / price.count,
      10,
    );
  }

  it('an Assistant names the route; its Run moves on after a 503 and bills the target that served', async () => {
    openai.script({ status: 503 });
    anthropic.script({ text: 'from claude', usage: { inputTokens: 10, outputTokens: 4 } });
    const run = await runOnRoute();
    expect(run.status).toBe('completed');
    expect(openai.requests).toHaveLength(1);
    expect(anthropic.requests).toHaveLength(1);
    await expectBilledOnceAtClaude(run.id, 10, 4);
  });

  it('does not move on after a request the vendor refuses (400)', async () => {
    openai.script({ status: 400 });
    const run = await runOnRoute();
    expect(run.status).toBe('failed');
    expect([openai.requests.length, anthropic.requests.length]).toEqual([1, 0]);
    expect(await debitsOfRun(run.id)).toHaveLength(0);
  });

  itOnEmbeddedEngine(
    'after a crash between a failover and the answer, resumes on the next target without drawing again, billing once',
    async () => {
      // A finished Run of the route gives the rows a Run needs (its thread, Assistant, request).
      anthropic.script({ text: 'first' });
      const source = await app.db
        .selectFrom('runs')
        .selectAll()
        .where('id', '=', (await runOnRoute()).id)
        .executeTakeFirstOrThrow();
      openai.reset();
      anthropic.reset();
      // State left by a process that died after recording the route's plan (step 1) and the failover from its first
      // target (step 2), before the second target answered.
      const id = newId('run');
      const { seq: _seq, ...columns } = source;
      await app.db
        .insertInto('runs')
        .values({
          ...columns,
          id,
          status: 'in_progress',
          request: JSON.stringify(source.request),
          transcript: JSON.stringify([]),
          rounds: 0,
          required_action: JSON.stringify(null),
          usage: JSON.stringify(null),
          last_error: JSON.stringify(null),
          metadata: JSON.stringify({}),
          started_at: new Date(),
          completed_at: null,
        })
        .execute();
      anthropic.script({ text: 'resumed on claude', usage: { inputTokens: 3, outputTokens: 3 } });
      expect(await resumeAfterFailover(app, id, 'run')).toBe('completed');
      // The failed target is not tried again; the recorded plan is not drawn again.
      expect(openai.requests).toHaveLength(0);
      expect(anthropic.requests).toHaveLength(1);
      const row = await app.db.selectFrom('runs').select(['status']).where('id', '=', id).executeTakeFirstOrThrow();
      expect(row.status).toBe('completed');
      await expectBilledOnceAtClaude(id, 3, 3);
    },
  );
});
