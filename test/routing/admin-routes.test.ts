import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ADMIN_TOKEN, TestApp, postgresUrl } from '../support/harness';
import { catalogWithRoutes, PAIR, useRouteSuite } from './route-catalog';

const run = promisify(execFile);

const adminOf = (app: TestApp) => (method: string, url: string, body?: unknown) =>
  app.request(method, url, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    ...(body === undefined ? {} : { body }),
  });

/** Operators change routes at run time (issue 36, api-decisions 34): the admin API and CLI, validated as the file is. */
describe('routes changed through the admin API', () => {
  const suite = useRouteSuite();
  const admin = (method: string, url: string, body?: unknown) => adminOf(suite.app)(method, url, body);
  const chat = (model: string) =>
    suite.app.request('POST', '/v2/chat/completions', {
      key: suite.key,
      body: { model, messages: [{ role: 'user', content: 'hello' }] },
    });

  it('creates a route that is served at once, replaces it and deletes it', async () => {
    const created = await admin('POST', '/admin/routes', {
      code: 'ops',
      type: 'llm',
      targets: [{ model: 'claude-haiku-4-5' }, { model: 'gpt-5-mini' }],
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      object: 'route',
      code: 'ops',
      name: 'ops',
      type: 'llm',
      strategy: 'fallback',
      targets: [{ model: 'claude-haiku-4-5' }, { model: 'gpt-5-mini' }],
      origin: 'admin',
      served: true,
    });
    const listed = await suite.app.request('GET', '/v2/models/ops', { key: suite.key });
    expect(listed.body).toMatchObject({ code: 'ops', available: true, route: { strategy: 'fallback' } });
    suite.anthropic.script({ text: 'from claude' });
    const first = await chat('ops');
    expect([first.status, first.body.model]).toEqual([200, 'claude-haiku-4-5']);

    const replaced = await admin('PUT', '/admin/routes/ops', {
      type: 'llm',
      strategy: 'weighted',
      targets: [{ model: 'gpt-5-mini', weight: 1 }, { model: 'pair' }],
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ code: 'ops', strategy: 'weighted', origin: 'admin' });
    suite.openai.script({ text: 'from openai' });
    const second = await chat('ops');
    expect([second.status, second.body.model]).toEqual([200, 'gpt-5-mini']);
    expect(suite.anthropic.requests).toHaveLength(1);

    const all = await admin('GET', '/admin/routes');
    expect(all.body.data.map((route: any) => [route.code, route.origin])).toEqual([
      ['pair', 'catalog'],
      ['reversed', 'catalog'],
      ['ops', 'admin'],
    ]);

    const deleted = await admin('DELETE', '/admin/routes/ops');
    expect(deleted.body).toEqual({ object: 'route.deleted', code: 'ops', deleted: true });
    expect((await admin('GET', '/admin/routes/ops')).status).toBe(404);
    expect((await suite.app.request('GET', '/v2/models/ops', { key: suite.key })).status).toBe(404);
    const gone = await chat('ops');
    expect([gone.status, gone.body.error.code]).toEqual([400, 'chat.invalid_request']);
    expect(gone.body.error.message).toMatch(/Unknown model "ops"/);
  });

  it('refuses what the loader refuses, naming the route, and leaves the routes as they were', async () => {
    const refused = async (method: string, url: string, body: unknown | undefined, message: RegExp) => {
      const reply = await admin(method, url, body);
      expect([reply.status, reply.body.error?.code]).toEqual([400, 'admin.invalid_request']);
      expect(reply.body.error.message).toMatch(message);
    };
    await refused(
      'POST',
      '/admin/routes',
      { code: 'bad', type: 'llm', targets: [{ model: 'gpt-9' }] },
      /Route "bad" cannot be created: route "bad": unknown target "gpt-9"/,
    );
    await refused(
      'POST',
      '/admin/routes',
      { code: 'bad', type: 'llm', targets: [{ model: 'dev-embed' }] },
      /route "bad": target "dev-embed" is a embed model; the route is llm/,
    );
    await refused(
      'POST',
      '/admin/routes',
      { code: 'dev-echo', type: 'llm', targets: [{ model: 'pair' }] },
      /route "dev-echo" has the code of a model/,
    );
    await refused(
      'POST',
      '/admin/routes',
      { code: 'bad', type: 'llm', targets: [{ model: 'dev-echo', weight: 2 }] },
      /targets\[0\]\.weight.*only a weighted route gives its targets weights/,
    );
    await refused('POST', '/admin/routes', { code: 'bad', type: 'tti', targets: [{ model: 'dev-echo' }] }, /type/);

    // A cycle through two operators' routes; a route another names cannot be deleted.
    expect(
      (await admin('POST', '/admin/routes', { code: 'a', type: 'llm', targets: [{ model: 'dev-echo' }] })).status,
    ).toBe(201);
    expect((await admin('POST', '/admin/routes', { code: 'b', type: 'llm', targets: [{ model: 'a' }] })).status).toBe(
      201,
    );
    await refused(
      'PUT',
      '/admin/routes/a',
      { type: 'llm', targets: [{ model: 'b' }] },
      /Route "a" cannot be changed so: route "a" makes a cycle: a → b → a/,
    );
    await refused('DELETE', '/admin/routes/a', undefined, /Route "a" cannot be deleted: route "b": unknown target "a"/);
    await refused(
      'PUT',
      '/admin/routes/a',
      { code: 'z', type: 'llm', targets: [{ model: 'b' }] },
      /not the path's "a"/,
    );

    const duplicate = await admin('POST', '/admin/routes', {
      code: 'a',
      type: 'llm',
      targets: [{ model: 'dev-echo' }],
    });
    expect([duplicate.status, duplicate.body.error.code]).toEqual([409, 'admin.conflict']);
    const fromFile = await admin('PUT', '/admin/routes/pair', { type: 'llm', targets: [{ model: 'dev-echo' }] });
    expect([fromFile.status, fromFile.body.error.code]).toEqual([409, 'admin.conflict']);
    expect(fromFile.body.error.message).toMatch(/Route "pair" is defined in the catalog file/);
    expect((await admin('DELETE', '/admin/routes/pair')).status).toBe(409);
    expect((await admin('DELETE', '/admin/routes/nothing')).status).toBe(404);

    // Nothing of the refused changes was written or served.
    expect(suite.app.runtime.deps.catalog.getRoute('a')?.targets).toEqual([{ model: 'dev-echo' }]);
    expect(suite.app.runtime.deps.catalog.getRoute('pair')?.targets).toEqual(PAIR.targets);
    expect(suite.app.runtime.deps.catalog.getRoute('bad')).toBeUndefined();
    const rows = await suite.app.db
      .selectFrom('catalog_routes')
      .select(['code', 'origin'])
      .orderBy('position')
      .execute();
    expect(rows).toEqual([
      { code: 'pair', origin: 'catalog' },
      { code: 'reversed', origin: 'catalog' },
      { code: 'a', origin: 'admin' },
      { code: 'b', origin: 'admin' },
    ]);
    expect((await admin('DELETE', '/admin/routes/b')).status).toBe(200);
    expect((await admin('DELETE', '/admin/routes/a')).status).toBe(200);
  });

  it('is driven by the admin CLI', async () => {
    const env = { ...process.env, SWITCHYARD_URL: suite.app.baseUrl, ADMIN_TOKEN, NODE_OPTIONS: '' };
    const cli = (...args: string[]) =>
      run(process.execPath, ['-r', '@swc-node/register', path.join(__dirname, '../../src/admin/cli.ts'), ...args], {
        env,
      });
    const created = await cli('route', 'create', 'cli-route', '--type', 'llm', '--targets', 'dev-echo');
    expect(created.stdout.trim()).toBe('cli-route  llm  fallback  dev-echo  (admin)');
    await cli('route', 'set', 'cli-route', '--type', 'llm', '--strategy', 'weighted', '--targets', 'pair=2,dev-echo');
    expect((await cli('route', 'list')).stdout).toMatch(
      /^cli-route {2}llm {2}weighted {2}pair=2, dev-echo {2}\(admin\)$/m,
    );
    await expect(cli('route', 'create', 'x', '--type', 'llm', '--targets', 'nothing')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/Error 400: Route "x" cannot be created: route "x": unknown target "nothing"/),
    });
    expect((await cli('route', 'delete', 'cli-route')).stdout.trim()).toBe('Route cli-route deleted.');
    expect(suite.app.runtime.deps.catalog.getRoute('cli-route')).toBeUndefined();
  });
});

describe('routes changed through the admin API, across starts', () => {
  it('keeps an operator’s route across a restart; the file wins a code it takes, and one the file broke is not served', async () => {
    const first = catalogWithRoutes([]);
    // The same storage on each start: PGlite's folder, or Postgres's schema.
    const dataDir = postgresUrl ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-routes-'));
    let app = await TestApp.start({ env: { CATALOG_PATH: first.file }, dataDir });
    const own = app.schema ? { schema: app.schema } : {};
    try {
      for (const route of [
        { code: 'kept', type: 'llm', targets: [{ model: 'dev-echo' }] },
        { code: 'taken', type: 'llm', targets: [{ model: 'dev-echo' }] },
        { code: 'broken', type: 'llm', targets: [{ model: 'kept' }] },
      ])
        expect((await adminOf(app)('POST', '/admin/routes', route)).status).toBe(201);
      await app.stop();
      app = await TestApp.start({ env: { CATALOG_PATH: first.file }, dataDir, ...own });
      expect(app.runtime.deps.catalog.listRoutes().map((route) => route.code)).toEqual(['kept', 'taken', 'broken']);
      await app.stop();

      // The file now defines "taken" (its version wins) and "kept", as an embed route: "broken", an llm route
      // through "kept", no longer fits.
      const second = catalogWithRoutes([
        { code: 'taken', type: 'llm', targets: [{ model: 'gpt-5-mini' }] },
        { code: 'kept', type: 'embed', targets: [{ model: 'dev-embed' }] },
      ]);
      app = await TestApp.start({ env: { CATALOG_PATH: second.file }, dataDir, ...own });
      const routes = (await adminOf(app)('GET', '/admin/routes')).body.data;
      expect(routes.map((route: any) => [route.code, route.origin, route.served, route.targets[0].model])).toEqual([
        ['taken', 'catalog', true, 'gpt-5-mini'],
        ['kept', 'catalog', true, 'dev-embed'],
        ['broken', 'admin', false, 'kept'],
      ]);
      expect(app.runtime.deps.catalog.getRoute('broken')).toBeUndefined();
      // The operator deletes it (or changes it to fit).
      expect((await adminOf(app)('DELETE', '/admin/routes/broken')).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

const onPostgres = postgresUrl ? describe : describe.skip;
onPostgres('routes changed through the admin API, on replicas', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await TestApp.start();
    b = await TestApp.start({ schema: a.schema, worker: false });
  });
  afterAll(async () => {
    await b.stop();
    await a.close();
  });

  /** Until `b` serves what `check` wants; far below the poll's 15 s, so only the announcement can do it in time. */
  async function untilOnB(check: () => boolean) {
    const deadline = Date.now() + 3_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error('the other replica did not see the change');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('a change on one replica is served by the other at once', async () => {
    const { key } = await a.createAccount();
    await adminOf(a)('POST', '/admin/routes', { code: 'shared', type: 'llm', targets: [{ model: 'dev-echo' }] });
    await untilOnB(() => b.runtime.deps.catalog.getRoute('shared') !== undefined);
    const reply = await b.request('POST', '/v2/chat/completions', {
      key,
      body: { model: 'shared', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect([reply.status, reply.body.model]).toEqual([200, 'dev-echo']);
    await adminOf(a)('DELETE', '/admin/routes/shared');
    await untilOnB(() => b.runtime.deps.catalog.getRoute('shared') === undefined);
  });
});
