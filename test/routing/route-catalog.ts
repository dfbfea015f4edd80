import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { startFakeAnthropic, startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { circuitsOf } from '../../src/routing/circuits';
import { sql } from 'kysely';
import { TestApp } from '../support/harness';
import { pollUntil } from '../responses/helpers';

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

/**
 * What a process that died mid-job leaves of a job on a route (embedded engine): its row running under a dead lease,
 * and its recorded steps from step 1 (after the start): the plan (PAIR's targets) and a failover from gpt-5-mini. Then
 * launches it, as the next process would, and answers the job's final status.
 */
export async function resumeAfterFailover(app: TestApp, id: string, kind: 'response' | 'run'): Promise<string> {
  const [plan, call] = kind === 'response' ? ['planRoute', 'callProvider'] : ['planRunRoute', 'callModel'];
  await app.db
    .insertInto('jobs')
    .values({
      id,
      kind,
      status: 'running',
      attempts: 1,
      lease_owner: 'a-dead-process',
      lease_expires_at: sql<Date>`now() - interval '1 minute'`,
      launched_at: new Date(),
    })
    .execute();
  await app.db
    .insertInto('job_steps')
    .values([
      {
        job_id: id,
        step: 1,
        activity: plan,
        result: JSON.stringify({ targets: ['gpt-5-mini', 'claude-haiku-4-5'], draw: 0.5 }),
      },
      {
        job_id: id,
        step: 2,
        activity: call,
        result: JSON.stringify({ kind: 'failover', model: 'gpt-5-mini', reason: 'server' }),
      },
    ])
    .execute();
  await app.runtime.deps.engine.launch({ id, kind });
  const job = await pollUntil(
    () => app.db.selectFrom('jobs').select(['status']).where('id', '=', id).executeTakeFirstOrThrow(),
    (row) => row.status === 'completed' || row.status === 'failed',
  );
  return job.status;
}
