import { TestApp, useTestApp } from '../support/harness';
import { createResponse, MODEL, waitForFinal } from './helpers';

/** Spec: Responses create body, Errors, Limits; DECISIONS 11, 13, 14, 17, 18, 22. Every refusal writes nothing. */
describe('responses: request validation and access', () => {
  const suite = useTestApp();

  const count = async (table: 'responses' | 'jobs' | 'idempotency_keys') => {
    const row = await suite.app.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  const rowCounts = async () => ({
    responses: await count('responses'),
    jobs: await count('jobs'),
    idempotency_keys: await count('idempotency_keys'),
  });

  const longText = (length: number) => 'x'.repeat(length);
  const weatherTool = {
    type: 'function',
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  };
  const mcpTool = {
    type: 'mcp',
    server_label: 'docs',
    server_url: 'https://mcp.example.com/sse',
    require_approval: 'never',
  };

  it.each<[string, Record<string, unknown>]>([
    ['input missing', { model: MODEL }],
    ['input a number', { model: MODEL, input: 42 }],
    ['input an object', { model: MODEL, input: { text: 'hi' } }],
    ['input an empty array', { model: MODEL, input: [] }],
    ['input item of an unknown type', { model: MODEL, input: [{ type: 'image', url: 'x' }] }],
    ['neither model nor assistant_id', { input: 'hi' }],
    ['stream with background true', { model: MODEL, input: 'hi', stream: true, background: true }],
    ['stream with background omitted', { model: MODEL, input: 'hi', stream: true }],
    [
      'previous_response_id with conversation',
      { model: MODEL, input: 'hi', previous_response_id: 'resp_x', conversation: 'conv_x' },
    ],
    ['temperature 3', { model: MODEL, input: 'hi', temperature: 3 }],
    ['temperature -0.1', { model: MODEL, input: 'hi', temperature: -0.1 }],
    ['top_p 2', { model: MODEL, input: 'hi', top_p: 2 }],
    ['reasoning_effort unknown', { model: MODEL, input: 'hi', reasoning_effort: 'extreme' }],
    ['truncation unknown', { model: MODEL, input: 'hi', truncation: 'sometimes' }],
    ['message_limit negative', { model: MODEL, input: 'hi', message_limit: -1 }],
    ['max_output_tokens 0', { model: MODEL, input: 'hi', max_output_tokens: 0 }],
    ['an unknown body field', { model: MODEL, input: 'hi', frequency: 1 }],
    [
      'metadata with 17 pairs',
      { model: MODEL, input: 'hi', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
    ],
    ['a metadata value of 513 characters', { model: MODEL, input: 'hi', metadata: { note: longText(513) } }],
    ['a metadata key of 65 characters', { model: MODEL, input: 'hi', metadata: { [longText(65)]: 'v' } }],
    ['a non-string metadata value', { model: MODEL, input: 'hi', metadata: { n: 1 } }],
    ['tools not an array', { model: MODEL, input: 'hi', tools: weatherTool }],
    ['a tool of an unknown type', { model: MODEL, input: 'hi', tools: [{ type: 'web_search' }] }],
    ['a function tool without a name', { model: MODEL, input: 'hi', tools: [{ type: 'function', parameters: {} }] }],
    [
      'a function tool name with spaces',
      { model: MODEL, input: 'hi', tools: [{ ...weatherTool, name: 'get weather' }] },
    ],
    [
      'function parameters not an object',
      { model: MODEL, input: 'hi', tools: [{ ...weatherTool, parameters: 'city' }] },
    ],
    ['a function tool with an unknown field', { model: MODEL, input: 'hi', tools: [{ ...weatherTool, function: {} }] }],
    ['duplicate function names', { model: MODEL, input: 'hi', tools: [weatherTool, weatherTool] }],
    [
      'an mcp tool without require_approval',
      {
        model: MODEL,
        input: 'hi',
        tools: [{ type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com' }],
      },
    ],
    [
      'an mcp tool without server_url',
      { model: MODEL, input: 'hi', tools: [{ type: 'mcp', server_label: 'docs', require_approval: 'never' }] },
    ],
  ])('400 response.invalid_request: %s', async (_case, body) => {
    const before = await rowCounts();
    const reply = await suite.app.request('POST', '/v2/responses', { key: suite.key, body });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error: { code: 'response.invalid_request', message: expect.any(String) } });
    expect(await rowCounts()).toEqual(before);
  });

  it.each<[string, string]>([
    ['an unknown model', 'no-such-model'],
    ['a model that is not an llm (dev-embed)', 'dev-embed'],
  ])('400 for %s, naming the model', async (_case, model) => {
    const before = await rowCounts();
    const reply = await suite.app.request('POST', '/v2/responses', { key: suite.key, body: { model, input: 'hi' } });
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('response.invalid_request');
    expect(reply.body.error.message).toContain(model);
    expect(await rowCounts()).toEqual(before);
  });

  it('400 for max_output_tokens above the model limit (dev-echo: 4096)', async () => {
    const reply = await suite.app.request('POST', '/v2/responses', {
      key: suite.key,
      body: { model: MODEL, input: 'hi', max_output_tokens: 4097 },
    });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({
      error: { code: 'response.invalid_request', message: expect.stringContaining('4096') },
    });
  });

  it('400 for a bad stream query on GET', async () => {
    const created = await createResponse(suite.app, suite.key, { input: 'query me', background: false });
    for (const query of [
      'stream=maybe',
      'stream=true&starting_after=abc',
      'stream=true&starting_after=1.5',
      'stream=true&starting_after=2147483648',
      'stream=true&starting_after=-99999999999',
      'stream=true&starting_after=1e24',
    ]) {
      const reply = await suite.app.request('GET', `/v2/responses/${created.body.id}?${query}`, { key: suite.key });
      expect([query, reply.status, reply.body.error?.code]).toEqual([query, 400, 'response.invalid_request']);
    }
  });

  it('400 for a body that is not JSON', async () => {
    const reply = await suite.app.request('POST', '/v2/responses', {
      key: suite.key,
      rawBody: '{"model": "dev-echo", "input": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error: { code: 'request.invalid_json', message: expect.any(String) } });
  });

  it('400 for an Idempotency-Key longer than 255 characters; 255 is accepted', async () => {
    const before = await rowCounts();
    const tooLong = await createResponse(suite.app, suite.key, { input: 'hi' }, { 'idempotency-key': longText(256) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toEqual({
      error: { code: 'request.invalid_request', message: expect.stringContaining('255') },
    });
    expect(await rowCounts()).toEqual(before);
    const longest = await createResponse(
      suite.app,
      suite.key,
      { input: 'hi', background: false },
      { 'idempotency-key': longText(255) },
    );
    expect(longest.status).toBe(200);
    expect(longest.body.status).toBe('completed');
  });

  describe("another account's resources are 404", () => {
    let other: { key: string; accountId: string };
    let otherConversation: string;
    let otherResponse: string;
    let otherAssistant: number;
    beforeAll(async () => {
      other = await suite.app.createAccount({ name: 'other' });
      otherConversation = (await suite.app.request('POST', '/v2/conversations', { key: other.key, body: {} })).body.id;
      const response = await createResponse(suite.app, other.key, { input: '/delay 30 a b c d e f g h i j' });
      otherResponse = response.body.id;
      const assistant = await suite.app.request('POST', '/v2/assistants', {
        key: other.key,
        body: { model: MODEL, name: 'theirs' },
      });
      expect(assistant.status).toBe(200);
      otherAssistant = assistant.body.id;
    });
    afterAll(async () => {
      await waitForFinal(suite.app, other.key, otherResponse);
    });

    it('conversation, previous response and assistant in a create body', async () => {
      const before = await rowCounts();
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ conversation: otherConversation }, 'conversation.not_found'],
        [{ conversation: { id: otherConversation } }, 'conversation.not_found'],
        [{ previous_response_id: otherResponse }, 'response.not_found'],
        [{ assistant_id: otherAssistant }, 'assistant.not_found'],
        [{ conversation: 'conv_missing' }, 'conversation.not_found'],
        [{ previous_response_id: 'resp_missing' }, 'response.not_found'],
        [{ assistant_id: 2_000_000_000 }, 'assistant.not_found'],
      ];
      for (const [fields, code] of cases) {
        const body = { input: 'hi', ...fields };
        if ('assistant_id' in fields) delete (body as Record<string, unknown>).model;
        const reply = await suite.app.request('POST', '/v2/responses', {
          key: suite.key,
          body: 'assistant_id' in fields ? body : { model: MODEL, ...body },
        });
        expect([reply.status, reply.body.error?.code]).toEqual([404, code]);
      }
      expect(await rowCounts()).toEqual(before);
    });

    it('get, stream, cancel and delete of their Response', async () => {
      for (const [method, path] of [
        ['GET', `/v2/responses/${otherResponse}`],
        ['GET', `/v2/responses/${otherResponse}?stream=true`],
        ['POST', `/v2/responses/${otherResponse}/cancel`],
        ['DELETE', `/v2/responses/${otherResponse}`],
      ]) {
        const reply = await suite.app.request(method, path, { key: suite.key });
        expect([method, path, reply.status, reply.body.error?.code]).toEqual([method, path, 404, 'response.not_found']);
      }
      // Untouched: still theirs and still running to completion.
      expect((await suite.app.request('GET', `/v2/responses/${otherResponse}`, { key: other.key })).status).toBe(200);
    });
  });

  it('402 when the balance is 0, and nothing is written', async () => {
    const broke = await suite.app.createAccount({ name: 'broke', balance: 0 });
    const before = await rowCounts();
    for (const body of [
      { input: 'hi' },
      { input: 'hi', background: false },
      { input: 'hi', background: false, stream: true },
    ]) {
      const reply = await createResponse(suite.app, broke.key, body, { 'idempotency-key': 'broke-1' });
      expect(reply.status).toBe(402);
      expect(reply.body).toEqual({ error: { code: 'organization.payment_required', message: expect.any(String) } });
    }
    expect(await rowCounts()).toEqual(before);
    const rows = await suite.app.db
      .selectFrom('responses')
      .select('id')
      .where('account_id', '=', broke.accountId)
      .execute();
    expect(rows).toEqual([]);
  });

  it('tool_choice must be satisfiable by the function tools: required needs one, a named function must be offered', async () => {
    const before = await rowCounts();
    const tool = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ tool_choice: 'required' }, /"required" needs at least one function or MCP tool/],
      [{ tool_choice: { type: 'function', name: 'lookup' } }, /names the function lookup, which is not among/],
      [{ tools: [tool], tool_choice: { type: 'function', name: 'other' } }, /names the function other/],
    ];
    for (const [body, message] of cases) {
      const reply = await createResponse(suite.app, suite.key, { input: 'hi', ...body });
      expect({ body, status: reply.status, code: reply.body.error?.code }).toEqual({
        body,
        status: 400,
        code: 'response.invalid_request',
      });
      expect(reply.body.error.message).toMatch(message);
    }
    expect(await rowCounts()).toEqual(before);
    // Satisfiable choices are accepted, the Assistant's tools included.
    const named = await createResponse(suite.app, suite.key, {
      input: '/call lookup {}',
      background: false,
      tools: [tool],
      tool_choice: { type: 'function', name: 'lookup' },
    });
    expect(named.status).toBe(200);
    expect(named.body.output[0]).toMatchObject({ type: 'function_call', name: 'lookup' });
    const assistant = await suite.app.request('POST', '/v2/assistants', {
      key: suite.key,
      body: {
        model: 'dev-echo',
        name: 'tools',
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }],
      },
    });
    expect(assistant.status).toBe(200);
    const viaAssistant = await suite.app.request('POST', '/v2/responses', {
      key: suite.key,
      body: { assistant_id: assistant.body.id, input: 'hi', background: false, tool_choice: 'required' },
    });
    expect(viaAssistant.status).toBe(200);
  });

  it('mcp tools: 403 mcp.forbidden without MCP on the account (its 400s: test/mcp)', async () => {
    const before = await rowCounts();
    const withoutMcp = await createResponse(suite.app, suite.key, { input: 'hi', tools: [mcpTool] });
    expect(withoutMcp.status).toBe(403);
    expect(withoutMcp.body).toEqual({ error: { code: 'mcp.forbidden', message: expect.any(String) } });
    const choice = await createResponse(suite.app, suite.key, {
      input: 'hi',
      tool_choice: { type: 'mcp', server_label: 'docs' },
    });
    expect([choice.status, choice.body.error.code]).toEqual([403, 'mcp.forbidden']);
    expect(await rowCounts()).toEqual(before);
  });

  it('a webhook_url to a private address is accepted only when the configuration allows it', async () => {
    // This app allows private networks (tests receive webhooks on loopback).
    const allowed = await createResponse(suite.app, suite.key, {
      input: 'hi',
      background: false,
      metadata: { webhook_url: 'http://127.0.0.1:9/hook' },
    });
    expect(allowed.status).toBe(200);

    const strict = await TestApp.start({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false' } });
    try {
      const account = await strict.createAccount();
      for (const url of [
        'http://127.0.0.1:8080/hook',
        'http://localhost/hook',
        'http://10.0.0.5/hook',
        'http://[::1]/hook',
        'ftp://example.com/hook',
        'not a url',
      ]) {
        const reply = await strict.request('POST', '/v2/responses', {
          key: account.key,
          body: { model: MODEL, input: 'hi', metadata: { webhook_url: url } },
        });
        expect([url, reply.status, reply.body.error?.code]).toEqual([url, 400, 'response.invalid_request']);
      }
      const rows = await strict.db.selectFrom('responses').select('id').execute();
      expect(rows).toEqual([]);
    } finally {
      await strict.close();
    }
  });
});
