import { LANGUAGE_VENDORS, startVendorFakes, type VendorFakes } from '../fakes';
import type { FakeScript } from '../fakes/fake-script';
import { TestApp } from '../support/harness';
import { catalogWithRoutes } from './route-catalog';

/**
 * The failover rule on every language-model wire protocol (issue 36, api-decisions 32): a route from each family's
 * model to dev-echo moves on after each retryable failure of that family's fake, and not after a 400. The circuit is
 * kept out of the way (ROUTE_CIRCUIT_FAILURES), so every case calls the fake once.
 */
const RETRYABLE: Array<[string, FakeScript]> = [
  ['500', { status: 500 }],
  ['503', { status: 503 }],
  ['429', { status: 429, retryAfter: '1' }],
  ['a reset connection', { resetConnection: true }],
  ['a timeout', { hang: true }],
];

describe.each(LANGUAGE_VENDORS)('a route whose first target is $vendor', ({ model, fake }) => {
  let fakes: VendorFakes;
  let app: TestApp;
  let key: string;
  beforeAll(async () => {
    fakes = await startVendorFakes();
    const { file } = catalogWithRoutes([{ code: 'family', type: 'llm', targets: [{ model }, { model: 'dev-echo' }] }]);
    app = await TestApp.start({
      env: { CATALOG_PATH: file, ...fakes.env, PROVIDER_TIMEOUT_MS: '400', ROUTE_CIRCUIT_FAILURES: '1000' },
    });
    ({ key } = await app.createAccount({ balance: 100_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await fakes?.close();
  });
  beforeEach(() => fakes.reset());

  const ask = () =>
    app.request('POST', '/v2/chat/completions', {
      key,
      body: { model: 'family', messages: [{ role: 'user', content: 'hello' }] },
    });

  it.each(RETRYABLE)('moves on to the next target after %s, at once', async (_name, fault) => {
    fake(fakes).script(fault);
    const reply = await ask();
    expect([reply.status, reply.body.model]).toEqual([200, 'dev-echo']);
    // Not retried: the next target is the retry.
    expect(fake(fakes).requests).toHaveLength(1);
  });

  it('does not move on after a 400', async () => {
    fake(fakes).script({ status: 400, errorMessage: 'bad input' });
    const reply = await ask();
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.body.model).toBeUndefined();
    expect(fake(fakes).requests).toHaveLength(1);
  });

  it('served by its own vendor when it answers', async () => {
    fake(fakes).script({ text: 'from the family' });
    const reply = await ask();
    expect([reply.status, reply.body.model]).toEqual([200, model]);
  });
});
