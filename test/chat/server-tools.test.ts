import { startVendorFakes, type VendorFakes } from '../fakes';
import { TestApp } from '../support/harness';

/**
 * Legacy chat completions' file search and code interpreter tools (spec: legacy chat completions body, `tools`:
 * "function, file search or code interpreter tools"; api-decisions 8): passed to the vendors that run them, in each
 * vendor's own form, and refused with a 400 naming the vendor otherwise. The model's answer comes back; the vendor's
 * own tool calls are not the client's `tools_calls`.
 */
describe('legacy chat completions: server tools (fake vendor servers)', () => {
  let fakes: VendorFakes;
  let app: TestApp;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    fakes = await startVendorFakes();
    app = await TestApp.start({ env: fakes.env });
    ({ key, accountId } = await app.createAccount({ balance: 10_000_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await fakes?.close();
  });
  beforeEach(() => fakes.reset());

  const chat = (body: Record<string, unknown>) =>
    app.request('POST', '/v2/chat/completions', {
      key,
      body: { messages: [{ role: 'user', content: 'What does the handbook say about leave?' }], ...body },
    });
  const fileSearch = { type: 'file_search', vector_store_ids: ['vs_handbook'], max_num_results: 4 };

  it('OpenAI runs both: file search over its vector stores, code in a container', async () => {
    fakes.openai.script({ text: 'Twenty days a year.', usage: { inputTokens: 900, outputTokens: 5 } });
    const reply = await chat({
      model: 'gpt-4.1-mini',
      tools: [
        fileSearch,
        { type: 'code_interpreter' },
        { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} } },
      ],
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      message: { role: 'assistant', content: 'Twenty days a year.' },
      tools_calls: [],
      finish_reason: 'COMPLETE',
      usage: { prompt_tokens: 900, completion_tokens: 5 },
    });
    expect(fakes.openai.requests[0]!.body.tools).toEqual([
      expect.objectContaining({ type: 'function', name: 'get_weather' }),
      { type: 'file_search', vector_store_ids: ['vs_handbook'], max_num_results: 4 },
      { type: 'code_interpreter', container: { type: 'auto' } },
    ]);

    // A named container, and files for a new one.
    fakes.openai.script({ text: 'ok' }, { text: 'ok' });
    expect(
      (await chat({ model: 'gpt-4.1-mini', tools: [{ type: 'code_interpreter', container: 'cntr_1' }] })).status,
    ).toBe(200);
    expect(
      (
        await chat({
          model: 'gpt-4.1-mini',
          tools: [{ type: 'code_interpreter', container: { type: 'auto', file_ids: ['file_1'] } }],
        })
      ).status,
    ).toBe(200);
    expect(fakes.openai.requests.slice(1).map((request) => request.body.tools)).toEqual([
      [{ type: 'code_interpreter', container: 'cntr_1' }],
      [{ type: 'code_interpreter', container: { type: 'auto', file_ids: ['file_1'] } }],
    ]);
  });

  it('Anthropic runs code (its code execution tool, with its beta header); Gemini runs both', async () => {
    fakes.anthropic.script({ text: 'The sum is 42.' });
    const anthropic = await chat({ model: 'claude-sonnet-4-5', tools: [{ type: 'code_interpreter' }] });
    expect(anthropic.status).toBe(200);
    expect(anthropic.body.message.content).toBe('The sum is 42.');
    const sent = fakes.anthropic.requests[0]!;
    expect(sent.body.tools).toEqual([{ type: 'code_execution_20250825', name: 'code_execution' }]);
    expect(sent.headers['anthropic-beta']).toContain('code-execution-2025-08-25');

    fakes.gemini.script({ text: 'Twenty days.' });
    const gemini = await chat({
      model: 'gemini-2.5-flash',
      tools: [{ type: 'file_search', vector_store_ids: ['fileSearchStores/handbook'] }, { type: 'code_interpreter' }],
    });
    expect(gemini.status).toBe(200);
    expect(gemini.body.message.content).toBe('Twenty days.');
    expect(fakes.gemini.requests[0]!.body.tools).toEqual([
      { fileSearch: { fileSearchStoreNames: ['fileSearchStores/handbook'] } },
      { codeExecution: {} },
    ]);
  });

  it('refused with a 400 naming the vendor where the vendor does not run the tool; nothing billed or sent', async () => {
    const before = await app.db
      .selectFrom('ledger_transactions')
      .select('id')
      .where('account_id', '=', accountId)
      .execute();
    const cases: Array<[string, Record<string, unknown>, string]> = [
      [
        'claude-sonnet-4-5',
        fileSearch,
        'tools[0]: vendor anthropic (model claude-sonnet-4-5) does not run file_search tools',
      ],
      [
        'mistral-small-latest',
        fileSearch,
        'tools[0]: vendor mistral (model mistral-small-latest) does not run file_search tools',
      ],
      [
        'mistral-small-latest',
        { type: 'code_interpreter' },
        'tools[0]: vendor mistral (model mistral-small-latest) does not run code_interpreter tools',
      ],
      [
        'claude-sonnet-4-5',
        { type: 'code_interpreter', container: 'cntr_1' },
        'tools[0].container: vendor anthropic runs code in a sandbox of its own',
      ],
    ];
    for (const [model, tool, message] of cases) {
      const reply = await chat({ model, tools: [tool] });
      expect([reply.status, reply.body.error.code]).toEqual([400, 'chat.invalid_request']);
      expect(reply.body.error.message).toContain(message);
    }
    for (const fake of [fakes.openai, fakes.anthropic, fakes.gemini, fakes.compatible])
      expect(fake.requests).toEqual([]);
    expect(
      await app.db.selectFrom('ledger_transactions').select('id').where('account_id', '=', accountId).execute(),
    ).toEqual(before);
  });
});
