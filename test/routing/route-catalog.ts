import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { startFakeAnthropic, startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { circuitsOf } from '../../src/routing/circuits';
import { TestApp } from '../support/harness';

/** The project's catalog plus `routes`, as a file for CATALOG_PATH; its text for parseCatalog. */
export function catalogWithRoutes(routes: unknown[]): { file: string; text: string } {
  const catalog = parse(fs.readFileSync(path.join(__dirname, '../../catalog.yaml'), 'utf8'));
  catalog.routes = routes;
  const text = stringify(catalog);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-routes-')), 'catalog.yaml');
  fs.writeFileSync(file, text);
  return { file, text };
}

/** An llm route from OpenAI to Anthropic (both fakes), the one the failover tests use. */
export const PAIR = {
  code: 'pair',
  type: 'llm',
  strategy: 'fallback',
  targets: [{ model: 'gpt-5-mini' }, { model: 'claude-haiku-4-5' }],
};

/** PAIR the other way round: Anthropic first, then OpenAI (which does not continue a reply it is given). */
export const REVERSED = { ...PAIR, code: 'reversed', targets: [...PAIR.targets].reverse() };

/** The suite of a describe block: OpenAI and Anthropic fakes, an app whose catalog has PAIR, an account. */
export interface RouteSuite {
  app: TestApp;
  openai: FakeVendorServer;
  anthropic: FakeVendorServer;
  key: string;
  accountId: string;
}

/** Starts the suite (beforeAll), resets the fakes before each test, closes everything (afterAll). */
export function useRouteSuite(env: Record<string, string> = {}): RouteSuite {
  const suite = {} as RouteSuite;
  beforeAll(async () => {
    [suite.openai, suite.anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
    suite.app = await TestApp.start({
      env: {
        CATALOG_PATH: catalogWithRoutes([PAIR, REVERSED]).file,
        OPENAI_API_KEY: 'sk-openai-test',
        OPENAI_BASE_URL: suite.openai.baseURL,
        ANTHROPIC_API_KEY: 'sk-ant-test',
        ANTHROPIC_BASE_URL: suite.anthropic.baseURL,
        ...env,
      },
    });
    Object.assign(suite, await suite.app.createAccount({ balance: 100_000 }));
  });
  afterAll(async () => {
    await suite.app?.close();
    await Promise.all([suite.openai?.close(), suite.anthropic?.close()]);
  });
  beforeEach(() => {
    suite.openai.reset();
    suite.anthropic.reset();
    // Each test starts with closed circuits: the failures of the tests before would open them (circuit.test.ts).
    const circuits = circuitsOf(suite.app.runtime.deps.providers);
    for (const vendor of ['openai', 'anthropic']) circuits.success(vendor);
  });
  return suite;
}
