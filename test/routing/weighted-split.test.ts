import { useRouteSuite } from './route-catalog';

/**
 * A weighted route's split over 1,000 real requests (issue 36, done means): chat completions through the API to a
 * route created at run time, 3 to gpt-5-mini for 1 to claude-haiku-4-5 (both fakes answering), each request drawn on
 * its own. The shares by the serving model and by /metrics' served counter agree and land within 4 points of 75/25
 * (a binomial's standard deviation here is 1.4 points).
 */
describe('a weighted route over 1,000 requests', () => {
  const suite = useRouteSuite();

  it('splits by weight within a few percent, as /metrics counts it', async () => {
    const created = await suite.app.admin('POST', '/admin/routes', {
      code: 'split',
      type: 'llm',
      strategy: 'weighted',
      targets: [
        { model: 'gpt-5-mini', weight: 3 },
        { model: 'claude-haiku-4-5', weight: 1 },
      ],
    });
    expect(created.status).toBe(201);
    const served: Record<string, number> = {};
    const TOTAL = 1000;
    let next = 0;
    // 20 at a time.
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < TOTAL) {
          next += 1;
          const reply = await suite.app.request('POST', '/v2/chat/completions', {
            key: suite.key,
            body: { model: 'split', messages: [{ role: 'user', content: 'hello' }] },
          });
          expect(reply.status).toBe(200);
          served[reply.body.model] = (served[reply.body.model] ?? 0) + 1;
        }
      }),
    );
    expect(served['gpt-5-mini'] + served['claude-haiku-4-5']).toBe(TOTAL);
    expect(Math.abs(served['gpt-5-mini'] / TOTAL - 0.75)).toBeLessThan(0.04);
    const metrics = (await suite.app.admin('GET', '/metrics')).body as string;
    for (const model of ['gpt-5-mini', 'claude-haiku-4-5'])
      expect(metrics).toContain(`switchyard_route_served_total{route="split",model="${model}"} ${served[model]}`);
    // No failover: each request went to its drawn target.
    expect(suite.openai.requests.length + suite.anthropic.requests.length).toBe(TOTAL);
  }, 120_000);
});
