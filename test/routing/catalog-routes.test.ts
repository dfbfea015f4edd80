import { CatalogError, parseCatalog } from '../../src/catalog/catalog.loader';
import { catalogFromDefinition } from '../../src/catalog/catalog.service';
import { readCatalogTables } from '../../src/catalog/catalog.repository';
import { modelRecord } from '../../src/openapi/reply-schemas';
import { planRoute } from '../../src/routing/route-plan';
import { TestApp } from '../support/harness';
import { catalogWithRoutes } from './route-catalog';

const refusal = (routes: unknown[]) => {
  try {
    parseCatalog(catalogWithRoutes(routes).text, 'test.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(CatalogError);
    return (error as Error).message;
  }
  throw new Error('the catalog was accepted');
};

describe('routes in the catalog', () => {
  it('refuses unknown targets, targets of another type and cycles, naming the route', () => {
    expect(refusal([{ code: 'smart', type: 'llm', targets: [{ model: 'gpt-9' }] }])).toMatch(
      /routes\[0\] \(smart\)\.targets\[0\]\.model: route "smart": unknown target "gpt-9"/,
    );
    expect(refusal([{ code: 'smart', type: 'llm', targets: [{ model: 'dev-embed' }] }])).toMatch(
      /route "smart": target "dev-embed" is a embed model; the route is llm/,
    );
    expect(
      refusal([
        { code: 'a', type: 'llm', targets: [{ model: 'dev-echo' }, { model: 'b' }] },
        { code: 'b', type: 'llm', targets: [{ model: 'a' }] },
      ]),
    ).toMatch(/route "a" makes a cycle: a → b → a[\s\S]*route "b" makes a cycle: b → a → b/);
    expect(refusal([{ code: 'dev-echo', type: 'llm', targets: [{ model: 'gpt-5' }] }])).toMatch(
      /route "dev-echo" has the code of a model/,
    );
    expect(refusal([{ code: 'w', type: 'llm', strategy: 'weighted', targets: [{ model: 'gpt-5' }] }])).toMatch(
      /a weighted route gives a target a weight above 0/,
    );
  });

  it('splits a weighted route by weight, the other targets as fallbacks, the same plan for the same draw', () => {
    const definition = parseCatalog(
      catalogWithRoutes([
        {
          code: 'split',
          type: 'llm',
          strategy: 'weighted',
          targets: [
            { model: 'gpt-5-mini', weight: 3 },
            { model: 'claude-haiku-4-5', weight: 1 },
            { model: 'dev-echo' },
          ],
        },
      ]).text,
      'test.yaml',
    );
    const catalog = catalogFromDefinition(definition, { OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' });
    const counts: Record<string, number> = {};
    for (let draw = 0; draw < 1000; draw += 1) {
      const plan = planRoute(catalog, 'split', Math.random());
      counts[plan[0]] = (counts[plan[0]] ?? 0) + 1;
      expect([...plan].sort()).toEqual(['claude-haiku-4-5', 'dev-echo', 'gpt-5-mini']);
    }
    // 750 and 250 expected; a binomial's standard deviation here is about 14.
    expect(Math.abs(counts['gpt-5-mini'] - 750)).toBeLessThan(60);
    expect(Math.abs(counts['claude-haiku-4-5'] - 250)).toBeLessThan(60);
    expect(counts['dev-echo']).toBeUndefined();
    expect(planRoute(catalog, 'split', 0.74)).toEqual(['gpt-5-mini', 'claude-haiku-4-5', 'dev-echo']);
    expect(planRoute(catalog, 'split', 0.76)).toEqual(['claude-haiku-4-5', 'gpt-5-mini', 'dev-echo']);
    // Without Anthropic's key its target is left out, and its share goes to the others.
    const partial = catalogFromDefinition(definition, { OPENAI_API_KEY: 'k' });
    expect(planRoute(partial, 'split', 0.9)).toEqual(['gpt-5-mini', 'dev-echo']);
  });

  describe('the models endpoints', () => {
    let app: TestApp;
    beforeAll(async () => {
      const { file } = catalogWithRoutes([
        {
          code: 'smart',
          type: 'llm',
          targets: [{ model: 'gpt-5-mini' }, { model: 'claude-haiku-4-5' }, { model: 'dev-echo' }],
        },
        { code: 'inner', type: 'llm', targets: [{ model: 'smart' }, { model: 'gpt-5' }] },
      ]);
      app = await TestApp.start({ env: { CATALOG_PATH: file, OPENAI_API_KEY: 'sk-test' } });
    });
    afterAll(() => app.close());

    it('list a route with what its available targets share', async () => {
      const { key } = await app.createAccount();
      const all = await app.request('GET', '/v2/models?type=llm', { key });
      const gpt = all.body['gpt-5-mini'];
      const echo = all.body['dev-echo'];
      // Anthropic has no key here: the capabilities are those of gpt-5-mini and dev-echo.
      expect(all.body.smart).toEqual({
        code: 'smart',
        name: 'smart',
        available: true,
        vendor: 'switchyard',
        type: 'llm',
        vision: gpt.vision && echo.vision,
        streaming: true,
        function_calling: true,
        structured_outputs: true,
        max_output: Math.min(gpt.max_output, echo.max_output),
        context_window: Math.min(gpt.context_window, echo.context_window),
        default: false,
        web_visible: true,
        protocols: gpt.protocols.filter((protocol: string) => echo.protocols.includes(protocol)),
        route: {
          strategy: 'fallback',
          targets: [{ model: 'gpt-5-mini' }, { model: 'claude-haiku-4-5' }, { model: 'dev-echo' }],
        },
      });
      // The OpenAPI document describes it.
      expect(modelRecord.strict().safeParse(all.body.smart).success).toBe(true);
      expect((await app.request('GET', '/v2/models/inner', { key })).body.route.targets).toEqual([
        { model: 'smart' },
        { model: 'gpt-5' },
      ]);
      const v1 = await app.request('GET', '/v1/models', { key });
      expect(v1.body.data.find((model: { id: string }) => model.id === 'smart')).toMatchObject({
        owned_by: 'switchyard',
      });
      const openai = await app.request('GET', '/openai/v1/models/smart', { key });
      expect(openai.body).toMatchObject({ id: 'smart', object: 'model' });
      // A route has no price of its own: it is billed at its serving target's.
      expect((await app.request('GET', '/v2/models/prices', { key })).body.smart).toBeUndefined();
    });

    it('mirrors the routes into the catalog tables', async () => {
      const { routes } = await readCatalogTables(app.db);
      expect(routes).toEqual([
        {
          code: 'smart',
          name: 'smart',
          type: 'llm',
          strategy: 'fallback',
          targets: [{ model: 'gpt-5-mini' }, { model: 'claude-haiku-4-5' }, { model: 'dev-echo' }],
          position: 0,
          origin: 'catalog',
        },
        {
          code: 'inner',
          name: 'inner',
          type: 'llm',
          strategy: 'fallback',
          targets: [{ model: 'smart' }, { model: 'gpt-5' }],
          position: 1,
          origin: 'catalog',
        },
      ]);
    });
  });
});
