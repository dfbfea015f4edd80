import { startVendorFakes, type FakeVendorServer, type VendorFakes } from '../fakes';
import { TestApp } from '../support/harness';
import { startMcpTestServer, type McpTestServer } from './mcp-test-server';

/**
 * The MCP loop with real vendor wire protocols (fakes on loopback): the service, not the vendor, calls the
 * MCP server, so every model that calls functions can use MCP tools. Parallel calls of one turn run together.
 */
let openai: FakeVendorServer;
let anthropic: FakeVendorServer;
let gemini: FakeVendorServer;
let compatible: FakeVendorServer;
let fakes: VendorFakes;

const VENDORS: Array<{ vendor: string; model: string; fake: () => FakeVendorServer }> = [
  { vendor: 'openai', model: 'gpt-4.1-mini', fake: () => openai },
  { vendor: 'anthropic', model: 'claude-sonnet-4-5', fake: () => anthropic },
  { vendor: 'google', model: 'gemini-2.5-flash', fake: () => gemini },
  { vendor: 'openai-compatible (mistral)', model: 'mistral-small-latest', fake: () => compatible },
];

describe('MCP tools on every vendor (fake vendor servers)', () => {
  let app: TestApp;
  let mcp: McpTestServer;
  let key: string;

  beforeAll(async () => {
    fakes = await startVendorFakes();
    ({ openai, anthropic, gemini, compatible } = fakes);
    mcp = await startMcpTestServer();
    app = await TestApp.start({ env: { ...fakes.env, OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' } });
    ({ key } = await app.createAccount({ mcpEnabled: true, balance: 10_000_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await mcp?.close();
    await fakes?.close();
  });
  beforeEach(() => {
    mcp.reset();
    fakes.reset();
  });

  const server = { type: 'mcp', server_label: 'calc', server_url: `PLACEHOLDER`, require_approval: 'never' };

  it.each(VENDORS)(
    '$vendor: two parallel calls in one turn run concurrently, their results reach the next turn, usage sums both turns',
    async ({ model, fake }) => {
      fake().script(
        {
          toolCalls: [
            { name: 'slow', arguments: { ms: 1500 } },
            { name: 'add', arguments: { a: 20, b: 22 } },
            { name: 'slow', arguments: { ms: 1500 } },
          ],
          usage: { inputTokens: 100, outputTokens: 10 },
        },
        { text: 'The sum is 42.', usage: { inputTokens: 150, outputTokens: 5 } },
      );
      const pending = app.request('POST', '/v2/responses', {
        key,
        body: {
          model,
          input: 'add 20 and 22, slowly',
          background: false,
          tools: [{ ...server, server_url: `${mcp.url}/mcp` }],
        },
      });
      // Both slow calls are running at once: the second started before the first finished.
      await mcp.waitForCalls('slow', 2);
      expect(mcp.calls.filter((call) => call.tool === 'slow').map((call) => call.finished)).toEqual([false, false]);
      const reply = await pending;
      expect(reply.status).toBe(200);
      expect(reply.body.status).toBe('completed');
      expect(reply.body.output.map((item: any) => `${item.type}:${item.name ?? ''}:${item.output ?? ''}`)).toEqual([
        'mcp_list_tools::',
        'mcp_call:slow:waited 1500 ms',
        'mcp_call:add:42',
        'mcp_call:slow:waited 1500 ms',
        'message::',
      ]);
      expect(reply.body.output[4].content[0].text).toBe('The sum is 42.');
      expect(reply.body.usage).toMatchObject({ input_tokens: 250, output_tokens: 15, total_tokens: 265 });

      // The vendor was offered the MCP tools as functions, and saw the three results in its second turn.
      const [first, second] = fake().requests;
      expect(first!.rawBody).toContain('Adds two numbers.');
      expect(second!.rawBody).toContain('42');
      expect(second!.rawBody.split('waited 1500 ms').length - 1).toBe(2);
    },
  );

  it('a tool_choice naming an MCP tool forces it in the first turn only', async () => {
    openai.script({ toolCalls: [{ name: 'add', arguments: { a: 1, b: 1 } }] }, { text: 'two' });
    const reply = await app.request('POST', '/v2/responses', {
      key,
      body: {
        model: 'gpt-4.1-mini',
        input: 'one plus one',
        background: false,
        tools: [{ ...server, server_url: `${mcp.url}/mcp` }],
        tool_choice: { type: 'mcp', server_label: 'calc', name: 'add' },
      },
    });
    expect(reply.body.status).toBe('completed');
    const [first, second] = openai.requests;
    expect(first!.body.tool_choice).toEqual({ type: 'function', name: 'add' });
    expect(second!.body.tool_choice).toBe('auto');
  });
});
