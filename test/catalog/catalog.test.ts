import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { ApiError } from '../../src/errors';
import { parseCatalog } from '../../src/catalog/catalog.loader';
import { readCatalogTables } from '../../src/catalog/catalog.repository';
import { createSchema, dropSchema, postgresUrl, TestApp, useTestApp } from '../support/harness';

/** The shipped catalog, read independently of the loader, for expectations. */
const shipped = parse(fs.readFileSync(path.join(__dirname, '../../catalog.yaml'), 'utf8')) as {
  vendors: Array<{ code: string; model_types: string[] }>;
  models: Array<{ code: string; vendor: string; type: string }>;
  prices: Record<string, unknown>;
};
const shippedModelCodes = shipped.models.map((model) => model.code);
const MODEL_FIELDS = [
  'code',
  'name',
  'available',
  'vendor',
  'type',
  'vision',
  'streaming',
  'function_calling',
  'structured_outputs',
  'max_output',
  'context_window',
  'default',
  'web_visible',
  'protocols',
];
const TYPES = ['llm', 'tts', 'stt', 'tti', 'ttv', 'embed'];

const devEcho = {
  code: 'dev-echo',
  name: 'Dev echo (simulator)',
  available: true,
  vendor: 'dev',
  type: 'llm',
  vision: false,
  streaming: true,
  function_calling: true,
  structured_outputs: true,
  max_output: 4096,
  context_window: 16384,
  default: false,
  web_visible: false,
  protocols: ['responses', 'chat_completions'],
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-catalog-'));
function writeCatalog(name: string, text: string): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, text);
  return file;
}

/** A Postgres schema this test owns (so a failed start-up leaves nothing behind); undefined on PGlite. */
async function ownSchema(): Promise<string | undefined> {
  return postgresUrl ? createSchema() : undefined;
}

describe('catalog endpoints (no vendor keys)', () => {
  const suite = useTestApp();

  const get = (url: string) => suite.app.request('GET', url, { key: suite.key });

  it('requires an API key', async () => {
    for (const url of [
      '/v2/models',
      '/v2/models/prices',
      '/v2/models/dev-echo',
      '/v2/vendors',
      '/v1/models',
      '/v1/getMe',
    ]) {
      const reply = await suite.app.request('GET', url);
      expect(reply.status).toBe(401);
      expect(reply.body.error.code).toBe('auth.unauthorized');
    }
  });

  it('GET /v2/models: every model of the file, keyed by code in file order, spec fields exactly', async () => {
    const reply = await get('/v2/models');
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.body)).toEqual(shippedModelCodes);
    for (const [code, record] of Object.entries<any>(reply.body)) {
      // Audio models add their own fields (api-decisions 24): tts its voices and text limit, stt whether it is asynchronous.
      const audioFields =
        record.type === 'tts' ? ['voices', 'max_input_characters'] : record.type === 'stt' ? ['asynchronous'] : [];
      expect(Object.keys(record)).toEqual([...MODEL_FIELDS, ...audioFields]);
      expect(record.code).toBe(code);
    }
    expect(reply.body['dev-tts']).toMatchObject({
      type: 'tts',
      voices: ['en-us', 'en-gb', 'de', 'fr', 'es', 'it'],
      max_input_characters: 1000,
    });
    expect(reply.body['dev-stt']).toMatchObject({ type: 'stt', asynchronous: false });
    expect(reply.body['dev-stt-async']).toMatchObject({ type: 'stt', asynchronous: true });
    expect(reply.body['dev-echo']).toEqual(devEcho);
    expect(reply.body['dev-embed']).toMatchObject({ type: 'embed', vendor: 'dev', available: true, protocols: [] });
    expect(reply.body['gpt-4.1']).toMatchObject({
      vendor: 'openai',
      type: 'llm',
      available: false,
      context_window: 1047576,
      max_output: 32768,
    });
    expect(reply.body['claude-sonnet-4-5']).toMatchObject({ vendor: 'anthropic', available: false });
    expect(reply.body['gemini-2.5-pro']).toMatchObject({ vendor: 'google', available: false });
    expect(reply.body['llama3.1:8b']).toMatchObject({ vendor: 'ollama', available: false });
    expect(reply.body['mistral-large-latest']).toMatchObject({ vendor: 'mistral', available: false });
    // Without keys only the built-in vendor is available.
    const available = Object.values<any>(reply.body)
      .filter((model) => model.available)
      .map((model) => model.vendor);
    expect(new Set(available)).toEqual(new Set(['dev']));
  });

  it('filters models by type and rejects unknown types', async () => {
    for (const type of TYPES) {
      const reply = await get(`/v2/models?type=${type}`);
      expect(reply.status).toBe(200);
      expect(Object.keys(reply.body)).toEqual(
        shipped.models.filter((model) => model.type === type).map((model) => model.code),
      );
    }
    expect(Object.keys((await get('/v2/models?type=embed')).body)).toEqual(
      expect.arrayContaining(['dev-embed', 'text-embedding-3-small', 'nomic-embed-text']),
    );
    expect((await get('/v2/models?type=ttv')).body).toEqual({});
    for (const query of ['type=video', 'type=', 'type=llm&type=embed', 'type=LLM']) {
      const reply = await get(`/v2/models?${query}`);
      expect(reply.status).toBe(400);
      expect(reply.body.error).toEqual({ code: 'model.invalid_request', message: expect.stringContaining('type') });
    }
  });

  it('GET /v2/models/{code}: one record; unknown code is 404 model.not_found', async () => {
    expect((await get('/v2/models/dev-echo')).body).toEqual(devEcho);
    const list = (await get('/v2/models')).body;
    expect((await get('/v2/models/llama3.1:8b')).body).toEqual(list['llama3.1:8b']);
    expect((await get('/v2/models/gpt-4o-mini')).body).toEqual(list['gpt-4o-mini']);
    const missing = await get('/v2/models/gpt-17');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toEqual({ code: 'model.not_found', message: expect.stringContaining('gpt-17') });
  });

  it('GET /v2/models/prices: keyed by model code (not captured by /models/{code}), filtered by type', async () => {
    const reply = await get('/v2/models/prices');
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.body)).toEqual(shippedModelCodes);
    expect(reply.body['dev-echo']).toEqual({ unit: 'tokens', count: 1000, input: 100, output: 200 });
    expect(reply.body['gpt-4.1']).toEqual({ unit: 'tokens', count: 1000000, input: 20000, output: 80000 });
    expect(reply.body['whisper-1']).toEqual({ unit: 'seconds', count: 60, input: 60, output: 0 });
    for (const price of Object.values<any>(reply.body)) {
      expect(Object.keys(price)).toEqual(['unit', 'count', 'input', 'output']);
      expect(price.count).toBeGreaterThan(0);
      expect(price.input).toBeGreaterThanOrEqual(0);
    }
    const embed = await get('/v2/models/prices?type=embed');
    expect(Object.keys(embed.body)).toEqual(
      shipped.models.filter((model) => model.type === 'embed').map((model) => model.code),
    );
    const bad = await get('/v2/models/prices?type=nope');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('model.invalid_request');
  });

  it('GET /v2/vendors: an array of vendor records; type filter; ttv is a 400', async () => {
    const reply = await get('/v2/vendors');
    expect(reply.status).toBe(200);
    expect(reply.body.map((vendor: any) => vendor.code)).toEqual(shipped.vendors.map((vendor) => vendor.code));
    for (const vendor of reply.body) expect(Object.keys(vendor)).toEqual(['code', 'name', 'available', 'model_types']);
    expect(reply.body.find((vendor: any) => vendor.code === 'dev')).toEqual({
      code: 'dev',
      name: 'Switchyard dev simulator',
      available: true,
      model_types: ['llm', 'embed', 'tts', 'stt'],
    });
    expect(reply.body.find((vendor: any) => vendor.code === 'openai')).toMatchObject({
      available: false,
      model_types: ['llm', 'embed', 'tts', 'stt'],
    });

    const embed = await get('/v2/vendors?type=embed');
    expect(embed.body.map((vendor: any) => vendor.code)).toEqual(
      shipped.vendors.filter((vendor) => vendor.model_types.includes('embed')).map((vendor) => vendor.code),
    );
    expect(embed.body.map((vendor: any) => vendor.code)).not.toContain('anthropic');
    expect((await get('/v2/vendors?type=tts')).body.map((vendor: any) => vendor.code)).toContain('openai');

    const ttv = await get('/v2/vendors?type=ttv');
    expect(ttv.status).toBe(400);
    expect(ttv.body.error).toEqual({ code: 'vendor.invalid_request', message: expect.stringContaining('ttv') });
    const nope = await get('/v2/vendors?type=nope');
    expect(nope.status).toBe(400);
    // The error lists what this listing takes: not ttv.
    expect(nope.body.error).toEqual({
      code: 'vendor.invalid_request',
      message: 'type: must be one of llm, tts, stt, tti, embed',
    });
  });

  it('GET /v2/vendors/{code} and /v2/vendors/{code}/models; unknown vendor is 404 vendor.not_found', async () => {
    expect((await get('/v2/vendors/dev')).body).toEqual({
      code: 'dev',
      name: 'Switchyard dev simulator',
      available: true,
      model_types: ['llm', 'embed', 'tts', 'stt'],
    });
    expect((await get('/v2/vendors/anthropic')).body).toEqual({
      code: 'anthropic',
      name: 'Anthropic',
      available: false,
      model_types: ['llm'],
    });

    const openai = await get('/v2/vendors/openai/models');
    expect(openai.status).toBe(200);
    expect(Object.keys(openai.body)).toEqual(
      shipped.models.filter((model) => model.vendor === 'openai').map((model) => model.code),
    );
    expect(
      Object.values<any>(openai.body).every((model) => model.vendor === 'openai' && model.available === false),
    ).toBe(true);
    const openaiEmbed = await get('/v2/vendors/openai/models?type=embed');
    expect(Object.keys(openaiEmbed.body)).toEqual(['text-embedding-3-small', 'text-embedding-3-large']);
    expect((await get('/v2/vendors/anthropic/models?type=embed')).body).toEqual({});
    expect(Object.keys((await get('/v2/vendors/dev/models')).body)).toEqual([
      'dev-echo',
      'dev-embed',
      'dev-tts',
      'dev-stt',
      'dev-stt-async',
    ]);

    for (const url of ['/v2/vendors/nobody', '/v2/vendors/nobody/models']) {
      const reply = await get(url);
      expect(reply.status).toBe(404);
      expect(reply.body.error).toEqual({ code: 'vendor.not_found', message: expect.stringContaining('nobody') });
    }
    const bad = await get('/v2/vendors/openai/models?type=nope');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('model.invalid_request');
  });

  it('v1: models as an OpenAI-style list, vendors, getMe', async () => {
    const models = await get('/v1/models');
    expect(models.status).toBe(200);
    expect(models.body.object).toBe('list');
    expect(models.body.data.map((model: any) => model.id)).toEqual(shippedModelCodes);
    const echo = models.body.data.find((model: any) => model.id === 'dev-echo');
    expect(echo).toEqual({ id: 'dev-echo', object: 'model', owned_by: 'dev', ...devEcho });
    expect((await get('/v1/models/dev-echo')).body).toEqual(echo);
    const missing = await get('/v1/models/nope');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('model.not_found');

    expect((await get('/v1/vendors')).body).toEqual((await get('/v2/vendors')).body);
    expect((await get('/v1/vendors/dev')).body).toEqual((await get('/v2/vendors/dev')).body);
    const noVendor = await get('/v1/vendors/nope');
    expect(noVendor.status).toBe(404);
    expect(noVendor.body.error.code).toBe('vendor.not_found');
  });

  it('v1 getMe: the calling account, key and balance', async () => {
    const created = await suite.app.createAccount({ name: 'me-test', balance: 4321, mcpEnabled: true });
    const reply = await suite.app.request('GET', '/v1/getMe', { key: created.key });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      account: { id: created.accountId, name: 'me-test', created_at: expect.any(Number), mcp_enabled: true },
      key: { id: created.keyId, created_at: expect.any(Number) },
      balance: 4321,
    });
    expect(Math.abs(reply.body.account.created_at - Date.now() / 1000)).toBeLessThan(120);
  });

  it('mirrors the file into the catalog tables', async () => {
    const tables = await readCatalogTables(suite.app.db);
    expect(tables.vendors.map((vendor) => vendor.code)).toEqual(shipped.vendors.map((vendor) => vendor.code));
    expect(tables.models.map((model) => model.code)).toEqual(shippedModelCodes);
    expect(tables.prices.map((price) => price.model_code).sort()).toEqual([...shippedModelCodes].sort());
    const echo = tables.models.find((model) => model.code === 'dev-echo')!;
    expect(echo).toMatchObject({
      vendor_code: 'dev',
      upstream_id: 'dev-echo',
      type: 'llm',
      streaming: true,
      protocols: ['responses', 'chat_completions'],
      is_default: false,
    });
    const claude = tables.models.find((model) => model.code === 'claude-sonnet-4-5')!;
    expect(claude.upstream_id).toBe('claude-sonnet-4-5-20250929');
    expect(tables.prices.find((price) => price.model_code === 'dev-echo')).toEqual({
      model_code: 'dev-echo',
      unit: 'tokens',
      count: 1000,
      input: 100,
      output: 200,
    });
    expect(tables.vendors.find((vendor) => vendor.code === 'openai')!.model_types).toEqual([
      'llm',
      'embed',
      'tts',
      'stt',
    ]);
  });

  it('requireUsableModel: unknown, wrong type and unconfigured vendor are 400s naming the fix', () => {
    const { catalog } = suite.app.runtime.deps;
    expect(catalog.requireUsableModel('dev-echo', 'response', 'llm').upstreamId).toBe('dev-echo');
    const attempt = (code: string, type: 'llm' | 'embed') => {
      try {
        catalog.requireUsableModel(code, 'embedding', type);
      } catch (error) {
        expect(ApiError.isInstance(error)).toBe(true);
        return {
          status: (error as ApiError).status,
          code: (error as ApiError).code,
          message: (error as ApiError).message,
        };
      }
      throw new Error(`${code} was accepted`);
    };
    expect(attempt('no-such-model', 'embed')).toEqual({
      status: 400,
      code: 'embedding.invalid_request',
      message: expect.stringContaining('Unknown model "no-such-model"'),
    });
    expect(attempt('dev-echo', 'embed')).toEqual({
      status: 400,
      code: 'embedding.invalid_request',
      message: expect.stringContaining('llm model'),
    });
    expect(attempt('text-embedding-3-small', 'embed')).toEqual({
      status: 400,
      code: 'model.not_available',
      message: expect.stringContaining('set OPENAI_API_KEY'),
    });
    expect(attempt('nomic-embed-text', 'embed')).toEqual({
      status: 400,
      code: 'model.not_available',
      message: expect.stringContaining('set OLLAMA_BASE_URL'),
    });
    expect(catalog.modelAvailability(catalog.getModel('gpt-4.1')!)).toEqual({
      available: false,
      missing: 'OPENAI_API_KEY',
    });
    expect(catalog.modelAvailability(catalog.getModel('dev-embed')!)).toEqual({ available: true });
  });

  it('the provider registry refuses an unconfigured vendor and serves dev', async () => {
    const { providers } = suite.app.runtime.deps;
    expect(() => providers.languageModel('openai')).toThrow(
      expect.objectContaining({
        status: 400,
        code: 'model.not_available',
        message: expect.stringContaining('OPENAI_API_KEY'),
      }),
    );
    expect(() => providers.embeddingModel('nobody')).toThrow(expect.objectContaining({ code: 'model.not_available' }));
    const reply = await providers
      .languageModel('dev')
      .generateText({ model: 'dev-echo', items: [{ type: 'message', role: 'user', text: 'hello there' }] });
    expect(reply.text).toBe('hello there');
    expect(providers.languageModel('dev')).toBe(providers.languageModel('dev'));
  });
});

describe('catalog availability follows the vendor settings', () => {
  const suite = useTestApp({
    app: {
      env: {
        OPENAI_API_KEY: 'sk-test-not-a-real-key',
        OLLAMA_BASE_URL: 'http://127.0.0.1:9/v1',
        MISTRAL_BASE_URL: 'http://127.0.0.1:9/v1',
      },
    },
  });

  it('shows a vendor with its key (or, keyless, its base URL) as available, and only that one', async () => {
    const vendors = (await suite.app.request('GET', '/v2/vendors', { key: suite.key })).body;
    const availability = Object.fromEntries(vendors.map((vendor: any) => [vendor.code, vendor.available]));
    // Mistral has a base URL but no key: still not configured.
    expect(availability).toEqual({
      openai: true,
      anthropic: false,
      google: false,
      mistral: false,
      deepgram: false,
      ollama: true,
      dev: true,
    });
    const models = (await suite.app.request('GET', '/v2/models', { key: suite.key })).body;
    expect(models['gpt-4.1'].available).toBe(true);
    expect(models['text-embedding-3-small'].available).toBe(true);
    expect(models['llama3.1:8b'].available).toBe(true);
    expect(models['claude-haiku-4-5'].available).toBe(false);
    expect(models['mistral-embed'].available).toBe(false);
    expect((await suite.app.request('GET', '/v2/models/gpt-4.1', { key: suite.key })).body.available).toBe(true);
    expect((await suite.app.request('GET', '/v1/models/gpt-4.1', { key: suite.key })).body.available).toBe(true);
  });

  it('requireUsableModel accepts the configured vendor and still names the missing key of others', () => {
    const { catalog } = suite.app.runtime.deps;
    expect(catalog.requireUsableModel('gpt-4.1', 'response', 'llm').vendor).toBe('openai');
    expect(catalog.requireUsableModel('nomic-embed-text', 'embedding', 'embed').upstreamId).toBe('nomic-embed-text');
    expect(() => catalog.requireUsableModel('claude-sonnet-4-5', 'response', 'llm')).toThrow(
      expect.objectContaining({
        code: 'model.not_available',
        message: expect.stringContaining('set ANTHROPIC_API_KEY'),
      }),
    );
  });
});

describe('catalog file validation at start-up', () => {
  const minimal = (models: string, extra = '') => `
vendors:
  - { code: dev, name: Dev, model_types: [llm, embed], adapter: dev }
  - { code: acme, name: Acme, model_types: [llm], adapter: openai-compatible, api_key_env: ACME_API_KEY, default_base_url: https://api.acme.test/v1 }
models:
${models}
prices:
  dev-echo: { unit: tokens, count: 1000, input: 1, output: 2 }
${extra}`;
  const echo =
    '  - { code: dev-echo, name: Echo, vendor: dev, upstream_id: dev-echo, type: llm, max_output: 10, context_window: 100 }';

  async function startupError(file: string): Promise<string> {
    const schema = await ownSchema();
    try {
      await TestApp.start({ env: { CATALOG_PATH: file }, schema });
    } catch (error) {
      return (error as Error).message;
    } finally {
      if (schema) await dropSchema(schema);
    }
    throw new Error('start-up succeeded with a broken catalog');
  }

  it('fails start-up naming the file, the line and the field', async () => {
    const file = writeCatalog(
      'bad-field.yaml',
      minimal(
        `${echo}\n  - { code: x1, name: X, vendor: dev, upstream_id: x1, type: llm, max_output: big, context_window: 100 }`,
        '  x1: { unit: tokens, count: 1, input: 1, output: 1 }',
      ),
    );
    const message = await startupError(file);
    expect(message).toContain(`Invalid catalog file ${file}`);
    expect(message).toMatch(/line 7, models\[1\] \(x1\)\.max_output: .*number/);
  });

  it('fails start-up on YAML syntax errors, a missing file and cross-reference errors', async () => {
    const syntax = writeCatalog('syntax.yaml', 'vendors: [\n  - code: dev\nmodels: {');
    expect(await startupError(syntax)).toMatch(
      new RegExp(`Invalid catalog file ${syntax}: YAML syntax error\\n  line \\d+`),
    );

    const missing = path.join(tmp, 'does-not-exist.yaml');
    expect(await startupError(missing)).toMatch(/Cannot read the catalog file .*does-not-exist\.yaml.*ENOENT/);

    const crossed = writeCatalog(
      'crossed.yaml',
      minimal(
        `${echo}\n  - { code: e1, name: E, vendor: acme, upstream_id: e1, type: embed, max_output: 0, context_window: 10 }\n  - { code: g1, name: G, vendor: ghost, upstream_id: g1, type: llm, max_output: 1, context_window: 10 }`,
        '  e1: { unit: tokens, count: 1, input: 1, output: 0 }\n  orphan: { unit: tokens, count: 1, input: 1, output: 0 }',
      ),
    );
    const message = await startupError(crossed);
    expect(message).toMatch(/models\[1\] \(e1\)\.type: "embed" is not among the model_types of vendor "acme"/);
    expect(message).toMatch(/models\[2\] \(g1\)\.vendor: unknown vendor "ghost"/);
    expect(message).toMatch(/models\[2\] \(g1\): model "g1" has no entry under prices/);
    expect(message).toMatch(/prices\.orphan: price for unknown model "orphan"/);
  });

  it('checks each rule of the file with a readable message', () => {
    const problem = (text: string) => {
      try {
        parseCatalog(text, 'test.yaml');
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(problem(minimal(echo))).toBe('accepted');
    expect(problem(minimal(echo.replace('max_output', 'max_ouptut')))).toMatch(
      /models\[0\] \(dev-echo\): Unrecognized key: "max_ouptut"/,
    );
    expect(problem(minimal(echo.replace('type: llm', 'type: video')))).toMatch(/models\[0\] \(dev-echo\)\.type: /);
    expect(problem(minimal(echo.replace('code: dev-echo', 'code: prices')))).toMatch(/\.code: is reserved/);
    expect(problem(minimal(echo.replace('code: dev-echo', 'code: a/b')))).toMatch(/\.code: must be 1-128 letters/);
    expect(problem(minimal(`${echo}\n${echo}`))).toMatch(
      /models\[1\] \(dev-echo\)\.code: duplicate model code "dev-echo"/,
    );
    expect(
      problem(
        minimal(
          echo
            .replace('context_window: 100', 'context_window: 100, default: true')
            .concat(
              '\n',
              echo.replace(/dev-echo/g, 'echo2').replace('context_window: 100', 'context_window: 100, default: true'),
            ),
          '  echo2: { unit: tokens, count: 1, input: 1, output: 1 }',
        ),
      ),
    ).toMatch(/models\[1\] \(echo2\)\.default: "dev-echo" is already the default llm model/);
    expect(problem(minimal(echo.replace('max_output: 10', 'max_output: 10, protocols: [smoke_signals]')))).toMatch(
      /\.protocols\[0\]: /,
    );
    expect(problem(minimal(echo).replace('input: 1, output: 2', 'input: 1, output: 2, currency: usd'))).toMatch(
      /prices\.dev-echo: Unrecognized key: "currency"/,
    );
    expect(problem(minimal(echo).replace('unit: tokens', 'unit: seconds'))).toMatch(
      /prices\.dev-echo\.unit: a llm model is priced in tokens/,
    );
    expect(problem(minimal(echo).replace('count: 1000', 'count: 0'))).toMatch(/prices\.dev-echo\.count: /);
    expect(problem(minimal(echo).replace('api_key_env: ACME_API_KEY, ', ''))).toMatch(
      /vendors\[1\] \(acme\)\.api_key_env: required when requires_key is true/,
    );
    expect(problem(minimal(echo).replace('api_key_env: ACME_API_KEY', 'api_key_env: acme-key'))).toMatch(
      /api_key_env: must be an environment variable name ending in _API_KEY/,
    );
    expect(problem(minimal(echo).replace('default_base_url: https://api.acme.test/v1', 'requires_key: false'))).toMatch(
      /vendors\[1\] \(acme\)\.base_url_env: required when requires_key is false/,
    );
    expect(problem(minimal(echo).replace('adapter: dev', 'adapter: dev, api_key_env: DEV_API_KEY'))).toMatch(
      /vendors\[0\] \(dev\)\.api_key_env: the built-in dev adapter takes no settings/,
    );
    expect(problem(minimal(echo).replace('adapter: openai-compatible', 'adapter: cohere'))).toMatch(
      /vendors\[1\] \(acme\)\.adapter: /,
    );
    expect(problem('vendors: []\nmodels: []\nprices: {}')).toMatch(/vendors: /);
    expect(problem('')).toMatch(/\(top level\)|vendors: /);
    expect(problem(minimal(echo).replace('dev-echo: { unit', 'dev-echo: { unit: tokens, unit'))).toMatch(
      /YAML syntax error/,
    );
  });
});

describe('catalog sync on start-up', () => {
  const first = `
vendors:
  - { code: dev, name: Dev, model_types: [llm, embed], adapter: dev }
  - { code: gone, name: Gone, model_types: [llm], adapter: openai, api_key_env: GONE_API_KEY }
models:
  - { code: dev-echo, name: Echo, vendor: dev, upstream_id: dev-echo, type: llm, max_output: 10, context_window: 100, protocols: [responses] }
  - { code: dev-embed, name: Embed, vendor: dev, upstream_id: dev-embed, type: embed, max_output: 0, context_window: 100 }
  - { code: old-model, name: Old, vendor: gone, upstream_id: old-1, type: llm, max_output: 1, context_window: 10 }
prices:
  dev-echo: { unit: tokens, count: 1000, input: 1, output: 2 }
  dev-embed: { unit: tokens, count: 1000, input: 1, output: 0 }
  old-model: { unit: tokens, count: 1000, input: 5, output: 5 }
`;
  const second = `
vendors:
  - { code: fresh, name: Fresh, model_types: [llm], adapter: anthropic, api_key_env: FRESH_API_KEY }
  - { code: dev, name: Dev renamed, model_types: [llm, embed], adapter: dev }
models:
  - { code: new-model, name: New, vendor: fresh, upstream_id: new-1, type: llm, max_output: 1, context_window: 10 }
  - { code: dev-echo, name: Echo 2, vendor: dev, upstream_id: dev-echo, type: llm, max_output: 20, context_window: 200, vision: true, protocols: [responses, chat_completions] }
prices:
  dev-echo: { unit: tokens, count: 100, input: 0.5, output: 3 }
  new-model: { unit: tokens, count: 1000, input: 7, output: 9 }
`;

  it('upserts what the file has and deletes what it no longer has, across restarts', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-catalog-sync-'));
    const schema = await ownSchema();
    try {
      let app = await TestApp.start({ env: { CATALOG_PATH: writeCatalog('first.yaml', first) }, dataDir, schema });
      let tables = await readCatalogTables(app.db);
      expect(tables.models.map((model) => model.code)).toEqual(['dev-echo', 'dev-embed', 'old-model']);
      await app.stop();

      app = await TestApp.start({ env: { CATALOG_PATH: writeCatalog('second.yaml', second) }, dataDir, schema });
      tables = await readCatalogTables(app.db);
      expect(tables.vendors).toEqual([
        { code: 'fresh', name: 'Fresh', model_types: ['llm'], position: 0 },
        { code: 'dev', name: 'Dev renamed', model_types: ['llm', 'embed'], position: 1 },
      ]);
      expect(tables.models.map((model) => [model.code, model.vendor_code, model.position])).toEqual([
        ['new-model', 'fresh', 0],
        ['dev-echo', 'dev', 1],
      ]);
      expect(tables.models[1]).toMatchObject({
        name: 'Echo 2',
        max_output: 20,
        context_window: 200,
        vision: true,
        protocols: ['responses', 'chat_completions'],
      });
      expect(tables.prices).toEqual([
        { model_code: 'dev-echo', unit: 'tokens', count: 100, input: 0.5, output: 3 },
        { model_code: 'new-model', unit: 'tokens', count: 1000, input: 7, output: 9 },
      ]);
      const { key } = await app.createAccount();
      expect(Object.keys((await app.request('GET', '/v2/models', { key })).body)).toEqual(['new-model', 'dev-echo']);
      expect((await app.request('GET', '/v2/models/old-model', { key })).status).toBe(404);
      expect((await app.request('GET', '/v2/models/prices', { key })).body).toEqual({
        'new-model': { unit: 'tokens', count: 1000, input: 7, output: 9 },
        'dev-echo': { unit: 'tokens', count: 100, input: 0.5, output: 3 },
      });
      await app.stop();
    } finally {
      if (schema) await dropSchema(schema);
    }
  });
});
