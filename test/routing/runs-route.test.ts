import { debitsOf, pollUntil } from '../responses/helpers';
import type { FakeVendorServer } from '../fakes';
import type { TestApp } from '../support/harness';
import { useRouteSuite } from './route-catalog';

/** A Run on a route (api-decisions 32): its model call fails over like chat's; each round billed at its server. */
describe('Runs on a route', () => {
  const suite = useRouteSuite();
  let app: TestApp;
  let openai: FakeVendorServer;
  let anthropic: FakeVendorServer;
  let key: string;
  let accountId: string;
  beforeEach(() => ({ app, openai, anthropic, key, accountId } = suite));

  it('an Assistant names the route; its Run moves on after a 503 and bills the target that served', async () => {
    const assistant = await app.request('POST', '/v2/assistants', { key, body: { model: 'pair', name: 'Routed' } });
    expect(assistant.status).toBe(200);
    expect(assistant.body.model).toBe('pair');
    const thread = await app.request('POST', '/v2/threads', {
      key,
      body: { messages: [{ role: 'user', content: 'hello' }] },
    });
    openai.script({ status: 503 });
    anthropic.script({ text: 'from claude', usage: { inputTokens: 10, outputTokens: 4 } });
    const created = await app.request('POST', `/v2/threads/${thread.body.id}/runs`, {
      key,
      body: { assistant_id: assistant.body.id },
    });
    expect(created.status).toBe(200);
    const run = await pollUntil(
      async () => (await app.request('GET', `/v2/threads/${thread.body.id}/runs/${created.body.id}`, { key })).body,
      (current) => ['completed', 'failed', 'incomplete', 'cancelled', 'expired'].includes(current.status),
      15_000,
    );
    expect(run.status).toBe('completed');
    expect(openai.requests).toHaveLength(1);
    expect(anthropic.requests).toHaveLength(1);
    const debits = (await debitsOf(app, accountId)).filter(
      (debit) => (debit.metadata as { run_id?: string }).run_id === run.id,
    );
    expect(debits).toHaveLength(1);
    expect(debits[0].metadata).toMatchObject({ route: 'pair', model: 'claude-haiku-4-5', vendor: 'anthropic' });
    const price = app.runtime.deps.catalog.getModel('claude-haiku-4-5')!.price!;
    expect(Number(debits[0].cost)).toBeCloseTo((10 * price.input + 4 * price.output) / price.count, 10);
  });
});
