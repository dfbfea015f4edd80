import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020';
import { TestApp, ADMIN_TOKEN } from '../support/harness';

type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, unknown> } };

/** Every route the app serves, as `METHOD /openapi/{template}`, read from its routers. */
function servedRoutes(app: TestApp): Set<string> {
  const routes = new Set<string>();
  for (const middleware of app.runtime.app.middleware as Array<{
    router?: { stack: Array<{ methods: string[]; path: string }> };
  }>) {
    for (const layer of middleware.router?.stack ?? []) {
      const path = layer.path.replace(/[:*](\w+)/g, '{$1}').replace(/(.)\/$/, '$1');
      for (const method of layer.methods) if (method !== 'HEAD') routes.add(`${method} ${path}`);
    }
  }
  return routes;
}

describe('GET /openapi.json', () => {
  let app: TestApp;
  let doc: Doc;
  beforeAll(async () => {
    app = await TestApp.start();
    const reply = await fetch(`${app.baseUrl}/openapi.json`);
    expect(reply.status).toBe(200);
    doc = (await reply.json()) as Doc;
  });
  afterAll(() => app?.close());

  it('is a valid OpenAPI 3.1 document (validated by swagger-parser)', async () => {
    const validated = (await SwaggerParser.validate(structuredClone(doc) as never)) as { openapi: string };
    expect(validated.openapi).toBe('3.1.0');
  });

  it('documents every route the app serves, and nothing it does not', () => {
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
      ),
    );
    const served = servedRoutes(app);
    expect([...served].filter((route) => !documented.has(route)).sort()).toEqual([]);
    expect([...documented].filter((route) => !served.has(route)).sort()).toEqual([]);
    expect(served.size).toBeGreaterThan(80);
  });

  it('describes security, the error envelope, Idempotency-Key and SSE', () => {
    const create = doc.paths['/v2/responses']!.post;
    expect(create.security).toEqual([{ apiKey: [] }, { bearerKey: [] }]);
    expect(create.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Idempotency-Key', in: 'header' })]),
    );
    expect(Object.keys(create.responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
    expect(create.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(doc.paths['/openai/v1/chat/completions']!.post.responses['400'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/OpenAIError',
    });
    expect(doc.paths['/healthz']!.get.security).toEqual([]);
    expect(doc.paths['/admin/accounts']!.get.security).toEqual([{ adminToken: [] }]);
  });
});

describe('real replies match their documented schemas', () => {
  let app: TestApp;
  let doc: Doc;
  let key: string;
  let accountId: string;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const checked = new Set<string>();

  beforeAll(async () => {
    app = await TestApp.start();
    doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as Doc;
    ({ key, accountId } = await app.createAccount());
  });
  afterAll(() => app?.close());

  /** Calls the API and checks the JSON reply against the schema documented for the route template and status. */
  async function call(
    method: string,
    template: string,
    params: Record<string, string | number> = {},
    options: { body?: unknown; admin?: boolean; query?: string } = {},
  ) {
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(params[name])));
    const url = path + (options.query ? `?${options.query}` : '');
    const reply = options.admin
      ? await app.admin(method, url, options.body)
      : await app.request(method, url, { key, body: options.body });
    const operation = doc.paths[template]?.[method.toLowerCase()];
    expect(operation).toBeDefined();
    const documented = operation.responses[String(reply.status)];
    expect({ route: `${method} ${template}`, status: reply.status, documented: Boolean(documented) }).toEqual({
      route: `${method} ${template}`,
      status: reply.status,
      documented: true,
    });
    const schema = documented.content?.['application/json']?.schema;
    if (schema) {
      const validate = ajv.compile({ ...schema, components: doc.components });
      const valid = validate(reply.body);
      expect({ route: `${method} ${template}`, status: reply.status, errors: valid ? null : validate.errors }).toEqual({
        route: `${method} ${template}`,
        status: reply.status,
        errors: null,
      });
    }
    checked.add(`${method} ${template}`);
    return reply;
  }

  it('for the families of the API, successes and errors', async () => {
    await call('GET', '/healthz');
    await call('GET', '/readyz');
    // Responses
    const done = (
      await call(
        'POST',
        '/v2/responses',
        {},
        { body: { model: 'dev-echo', input: 'hello', background: false, metadata: { a: 'b' } } },
      )
    ).body;
    await call('GET', '/v2/responses/{id}', { id: done.id });
    await call('GET', '/v2/responses/{id}/input_items', { id: done.id });
    const queued = (
      await call('POST', '/v2/responses', {}, { body: { model: 'dev-echo', input: '/delay 500 /words 20' } })
    ).body;
    await call('POST', '/v2/responses/{id}/cancel', { id: queued.id });
    await call('DELETE', '/v2/responses/{id}', { id: done.id });
    await call('GET', '/v2/responses/{id}', { id: 'resp_missing' });
    await call('POST', '/v2/responses', {}, { body: { model: 'dev-echo' } });
    const called = (
      await call(
        'POST',
        '/openai/v1/responses',
        {},
        {
          body: {
            model: 'dev-echo',
            input: '/call f {"x":1}',
            tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
          },
        },
      )
    ).body;
    expect(called.output[0].type).toBe('function_call');
    await call('GET', '/openai/v1/responses/{id}', { id: 'resp_missing' });
    // Conversations
    const conversation = (
      await call(
        'POST',
        '/v2/conversations',
        {},
        { body: { items: [{ type: 'message', role: 'user', content: 'hi' }] } },
      )
    ).body;
    await call('GET', '/v2/conversations');
    await call('GET', '/v2/conversations/{conversationId}', { conversationId: conversation.id });
    await call(
      'POST',
      '/v2/conversations/{conversationId}',
      { conversationId: conversation.id },
      { body: { metadata: { k: 'v' } } },
    );
    const items = (
      await call(
        'POST',
        '/v2/conversations/{conversationId}/items',
        { conversationId: conversation.id },
        { body: { items: [{ type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' }] } },
      )
    ).body;
    await call('GET', '/v2/conversations/{conversationId}/items', { conversationId: conversation.id });
    await call('GET', '/v2/conversations/{conversationId}/items/{itemId}', {
      conversationId: conversation.id,
      itemId: items.data[0].id,
    });
    await call('DELETE', '/v2/conversations/{conversationId}/items/{itemId}', {
      conversationId: conversation.id,
      itemId: items.data[0].id,
    });
    await call('DELETE', '/v2/conversations/{conversationId}', { conversationId: conversation.id });
    await call('POST', '/openai/v1/conversations', {}, { body: { items: 'x' } });
    // Catalog, organization
    await call('GET', '/v2/models');
    await call('GET', '/v2/models/prices');
    await call('GET', '/v2/models/{code}', { code: 'dev-echo' });
    await call('GET', '/v2/models/{code}', { code: 'dev-tts' });
    await call('GET', '/v2/vendors');
    await call('GET', '/v2/vendors/{code}', { code: 'dev' });
    await call('GET', '/v2/vendors/{code}/models', { code: 'dev' });
    await call('GET', '/v2/organization/balance');
    await call('GET', '/v2/organization/transactions');
    await call('GET', '/v2/organization/transactions', {}, { query: 'limit=5&service=responses&model=dev-echo' });
    await call('GET', '/v2/organization/usage');
    await call('GET', '/v2/organization/usage', {}, { query: 'group_by=model' });
    await call('GET', '/v2/organization/usage', {}, { query: 'from=10&to=5' });
    const ownKey = (
      await call('POST', '/v2/organization/keys', {}, { body: { name: 'console', expires_in_seconds: 3600 } })
    ).body;
    await call('GET', '/v2/organization/keys');
    await call('POST', '/v2/organization/keys/{id}/disable', { id: ownKey.id });
    await call('POST', '/v2/organization/keys/{id}/disable', { id: 'key_missing' });
    await call('GET', '/v2/organization/responses');
    await call('GET', '/v2/organization/responses', {}, { query: 'status=bogus' });
    await call('GET', '/v2/organization/responses/{id}', { id: called.id });
    await call('GET', '/v2/organization/responses/{id}', { id: 'resp_missing' });
    await call('GET', '/v2/organization/webhook-signing');
    await call('POST', '/v2/organization/webhook-signing/rotate');
    await call('POST', '/v2/organization/webhook-signing');
    await call('POST', '/v2/organization/webhook-signing');
    await call('POST', '/v2/organization/webhook-signing/rotate', {}, { body: { keep_previous_seconds: 60 } });
    await call('GET', '/v2/organization/webhook-signing');
    await call('DELETE', '/v2/organization/webhook-signing');
    // Embeddings, chat
    await call('POST', '/v2/embeddings', {}, { body: { model: 'dev-embed', input: 'words to embed' } });
    await call(
      'POST',
      '/v2/chat/completions',
      {},
      { body: { model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] } },
    );
    await call(
      'POST',
      '/v1/chat/completions',
      {},
      { body: { model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] } },
    );
    await call(
      'POST',
      '/openai/v1/chat/completions',
      {},
      { body: { model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] } },
    );
    await call('POST', '/openai/v1/chat/completions', {}, { body: { model: 'dev-echo', messages: [] } });
    await call('POST', '/openai/v1/embeddings', {}, { body: { model: 'dev-embed', input: ['a', 'b'] } });
    await call('GET', '/openai/v1/models');
    await call('GET', '/openai/v1/models/{id}', { id: 'dev-echo' });
    // v1
    await call('GET', '/v1/models');
    await call('GET', '/v1/models/{code}', { code: 'dev-echo' });
    await call('GET', '/v1/vendors');
    await call('GET', '/v1/vendors/{code}', { code: 'dev' });
    await call('GET', '/v1/getMe');
    // Assistants, threads, runs
    const assistant = (
      await call(
        'POST',
        '/v2/assistants',
        {},
        { body: { model: 'dev-echo', name: 'helper', instructions: 'be brief' } },
      )
    ).body;
    await call('GET', '/v2/assistants');
    await call('GET', '/v2/assistants/{assistantId}', { assistantId: assistant.id });
    await call(
      'POST',
      '/v2/assistants/{assistantId}',
      { assistantId: assistant.id },
      { body: { model: 'dev-echo', name: 'helper 2' } },
    );
    const thread = (await call('POST', '/v2/threads', {}, { body: { messages: [{ role: 'user', content: 'hello' }] } }))
      .body;
    await call('GET', '/v2/threads/{threadId}', { threadId: thread.id });
    await call('POST', '/v2/threads/{threadId}', { threadId: thread.id }, { body: { metadata: { k: 'v' } } });
    const message = (
      await call(
        'POST',
        '/v2/threads/{threadId}/messages',
        { threadId: thread.id },
        { body: { role: 'user', content: 'more' } },
      )
    ).body;
    await call('GET', '/v2/threads/{threadId}/messages', { threadId: thread.id });
    await call('GET', '/v2/threads/{threadId}/messages/{messageId}', { threadId: thread.id, messageId: message.id });
    await call(
      'POST',
      '/v2/threads/{threadId}/messages/{messageId}',
      { threadId: thread.id, messageId: message.id },
      { body: { metadata: { k: 'v' } } },
    );
    const bulk = (
      await call(
        'POST',
        '/v2/threads/{threadId}/messages/bulk-create',
        { threadId: thread.id },
        { body: { messages: [{ role: 'user', content: 'x' }] } },
      )
    ).body;
    await call(
      'DELETE',
      '/v2/threads/{threadId}/messages/bulk-delete',
      { threadId: thread.id },
      { body: { message_ids: [bulk.data[0].id] } },
    );
    await call('DELETE', '/v2/threads/{threadId}/messages/{messageId}', { threadId: thread.id, messageId: message.id });
    const run = (
      await call(
        'POST',
        '/v2/threads/{threadId}/runs',
        { threadId: thread.id },
        { body: { assistant_id: assistant.id } },
      )
    ).body;
    await call('GET', '/v2/threads/{threadId}/runs', { threadId: thread.id });
    await call('GET', '/v2/threads/{threadId}/runs/{runId}', { threadId: thread.id, runId: run.id });
    await call(
      'POST',
      '/v2/threads/{threadId}/runs/{runId}',
      { threadId: thread.id, runId: run.id },
      { body: { metadata: { k: 'v' } } },
    );
    await call('POST', '/v2/threads/{threadId}/runs/{runId}/cancel', { threadId: thread.id, runId: run.id });
    await call(
      'POST',
      '/v2/threads/{threadId}/runs/{runId}/submit_tool_outputs',
      { threadId: thread.id, runId: run.id },
      { body: { tool_outputs: [{ tool_call_id: 'call_x', output: 'y' }] } },
    );
    await call(
      'POST',
      '/v2/threads/runs',
      {},
      { body: { assistant_id: assistant.id, thread: { messages: [{ role: 'user', content: 'hi' }] } } },
    );
    await call('GET', '/v2/organization/runs');
    await call('DELETE', '/v2/threads/{threadId}', { threadId: thread.id });
    await call('DELETE', '/v2/assistants/{assistantId}', { assistantId: assistant.id });
    // Admin
    const account = (
      await call('POST', '/admin/accounts', {}, { admin: true, body: { name: 'documented', balance: 10 } })
    ).body;
    await call('GET', '/admin/accounts', {}, { admin: true });
    await call('PATCH', '/admin/accounts/{id}', { id: account.id }, { admin: true, body: { mcp_enabled: true } });
    await call('POST', '/admin/accounts/{id}/credits', { id: account.id }, { admin: true, body: { amount: 5 } });
    const created = (
      await call('POST', '/admin/accounts/{id}/keys', { id: account.id }, { admin: true, body: { name: 'k' } })
    ).body;
    await call('GET', '/admin/accounts/{id}', { id: account.id }, { admin: true });
    await call('GET', '/admin/accounts/{id}/keys', { id: account.id }, { admin: true });
    await call('POST', '/admin/keys/{id}/disable', { id: created.id }, { admin: true });
    await call('POST', '/admin/keys/{id}/enable', { id: created.id }, { admin: true });
    await call(
      'POST',
      '/admin/accounts/{id}/adjustments',
      { id: account.id },
      { admin: true, body: { type: 'debit', amount: 3, reason: 'documented', idempotency_key: 'doc-1' } },
    );
    await call(
      'POST',
      '/admin/accounts/{id}/adjustments',
      { id: account.id },
      { admin: true, body: { type: 'debit', amount: 3, reason: 'documented', idempotency_key: 'doc-1' } },
    );
    await call(
      'POST',
      '/admin/accounts/{id}/adjustments',
      { id: account.id },
      { admin: true, body: { type: 'debit', amount: 10_000, reason: 'too much', idempotency_key: 'doc-2' } },
    );
    await call('GET', '/admin/accounts/{id}/usage', { id: account.id }, { admin: true, query: 'group_by=service' });
    // Routes changed at run time (api-decisions 34): created, shown, replaced, a conflict, deleted, then not found.
    const route = { code: 'documented-route', type: 'llm', targets: [{ model: 'dev-echo' }] };
    await call('POST', '/admin/routes', {}, { admin: true, body: route });
    await call('GET', '/admin/routes', {}, { admin: true });
    await call('GET', '/admin/routes/{code}', { code: route.code }, { admin: true });
    await call('PUT', '/admin/routes/{code}', { code: route.code }, { admin: true, body: { ...route, name: 'Doc' } });
    expect((await call('POST', '/admin/routes', {}, { admin: true, body: route })).status).toBe(409);
    await call('DELETE', '/admin/routes/{code}', { code: route.code }, { admin: true });
    expect((await call('GET', '/admin/routes/{code}', { code: route.code }, { admin: true })).status).toBe(404);
    await call('POST', '/admin/accounts/{id}/suspend', { id: account.id }, { admin: true });
    await call('POST', '/admin/accounts/{id}/reactivate', { id: account.id }, { admin: true });
    // The OpenAI-compatible remounts of Responses and Conversations
    const compatible = (
      await call('POST', '/openai/v1/responses', {}, { body: { model: 'dev-echo', input: 'compatible' } })
    ).body;
    await call('GET', '/openai/v1/responses/{id}/input_items', { id: compatible.id });
    await call('POST', '/openai/v1/responses/{id}/cancel', { id: compatible.id });
    await call('DELETE', '/openai/v1/responses/{id}', { id: compatible.id });
    const openAIConversation = (await call('POST', '/openai/v1/conversations', {}, { body: {} })).body;
    await call('GET', '/openai/v1/conversations');
    await call('GET', '/openai/v1/conversations/{conversationId}', { conversationId: openAIConversation.id });
    await call(
      'POST',
      '/openai/v1/conversations/{conversationId}',
      { conversationId: openAIConversation.id },
      { body: { metadata: {} } },
    );
    const openAIItems = (
      await call(
        'POST',
        '/openai/v1/conversations/{conversationId}/items',
        { conversationId: openAIConversation.id },
        { body: { items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] }] } },
      )
    ).body;
    await call('GET', '/openai/v1/conversations/{conversationId}/items', { conversationId: openAIConversation.id });
    await call('GET', '/openai/v1/conversations/{conversationId}/items/{itemId}', {
      conversationId: openAIConversation.id,
      itemId: openAIItems.data[0].id,
    });
    await call('DELETE', '/openai/v1/conversations/{conversationId}/items/{itemId}', {
      conversationId: openAIConversation.id,
      itemId: openAIItems.data[0].id,
    });
    await call('DELETE', '/openai/v1/conversations/{conversationId}', { conversationId: openAIConversation.id });
    // Audio: a refusal of each (the audio replies themselves are checked in test/audio, whose bodies are MP3 or multipart)
    await call('POST', '/v2/audio/speech', {}, { body: { model: 'dev-tts' } });
    await call(
      'POST',
      '/openai/v1/audio/speech',
      {},
      { body: { model: 'dev-tts', voice: 'en-us', input: 'x', response_format: 'opus' } },
    );
    await call('GET', '/v2/audio/transcription/check/{id}', { id: 'missing' });
    await call('GET', '/v2/audio/transcription/result/{id}', { id: 'missing' });
    expect(accountId).toBeTruthy();

    // What this scenario does not call: pages (not JSON) and the multipart upload (test/audio covers it).
    const unchecked = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`))
      .filter((route) => !checked.has(route));
    expect(unchecked.sort()).toEqual([
      'GET /console',
      'GET /console/assets/{file}',
      'GET /console/{path}',
      'GET /docs',
      'GET /docs/{file}',
      'GET /metrics',
      'GET /openapi.json',
      'POST /openai/v1/audio/transcriptions',
      'POST /v2/audio/transcription',
    ]);
  });
});

describe('GET /metrics and /docs in the document', () => {
  it('are documented without JSON replies', async () => {
    const app = await TestApp.start();
    try {
      const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as Doc;
      expect(Object.keys(doc.paths['/metrics']!.get.responses['200'].content)).toEqual(['text/plain; version=0.0.4']);
      const metrics = await fetch(`${app.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(metrics.status).toBe(200);
    } finally {
      await app.close();
    }
  });
});
