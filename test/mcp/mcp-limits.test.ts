import { performance } from 'node:perf_hooks';
import { createResponse } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { useMcpSuite } from './mcp-suite';

/**
 * What a hostile MCP server or caller cannot make the service do: read a listing past its byte budget (the reply is
 * cut while it is read), or send headers that frame or route the request (refused at creation).
 */
describe('MCP budgets and caller headers', () => {
  const budget = 256 * 1024;
  const suite = useMcpSuite({ MCP_TOOL_TIMEOUT_MS: '10000', MCP_MAX_RESPONSE_BYTES: String(budget) });

  const { server } = suite;

  it('a 128 MiB listing is cut at the reply budget: the listing fails with a clear error, the Response still answers', async () => {
    const started = performance.now();
    const reply = await createResponse(suite.app, suite.key, {
      background: false,
      input: 'hi',
      tools: [server({ server_url: `${suite.mcp.url}/huge/mcp` })],
    });
    const elapsedMs = performance.now() - started;
    expect(reply.status).toBe(200);
    expect(reply.body.status).toBe('completed');
    const [listing, message] = reply.body.output;
    expect(listing).toMatchObject({
      type: 'mcp_list_tools',
      server_label: 'calc',
      tools: [],
      error: expect.stringContaining(`larger than ${budget} bytes`),
    });
    expect(message.type).toBe('message');
    // Without the budget the whole 128 MiB was read and parsed (24 s and +1.5 GB in the audit); with it the
    // listing fails as soon as the budget is read (mcp-budget.test.ts shows the connection closed there).
    expect(elapsedMs).toBeLessThan(5000);
  });

  it('a listing within the reply budget but past the listing budget fails the same way', async () => {
    const small = await TestApp.start({
      env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true', MCP_MAX_LISTING_BYTES: '512' },
    });
    try {
      const account = await small.createAccount({ mcpEnabled: true, balance: 1_000_000 });
      const reply = await createResponse(small, account.key, { background: false, input: 'hi', tools: [server()] });
      expect(reply.body.output[0]).toMatchObject({
        type: 'mcp_list_tools',
        tools: [],
        error: expect.stringContaining('larger than 512 bytes in all'),
      });
      expect(reply.body.status).toBe('completed');
    } finally {
      await small.close();
    }
  });

  it("a tool result past the reply budget is the call's error; the model is told and the Response goes on", async () => {
    const reply = await createResponse(suite.app, suite.key, {
      background: false,
      input: '/call flood {"mb": 8}',
      tools: [server()],
    });
    expect(reply.body.status).toBe('completed');
    const call = reply.body.output.find((item: any) => item.type === 'mcp_call');
    expect(call).toMatchObject({
      name: 'flood',
      output: null,
      status: 'failed',
      error: expect.stringContaining(`larger than ${budget} bytes`),
    });
  });

  it.each<[string, Record<string, string>, RegExp]>([
    ['Host', { Host: 'internal.example' }, /must not set Host/],
    ['Content-Length', { 'Content-Length': '1' }, /must not set Content-Length/],
    ['Transfer-Encoding', { 'transfer-encoding': 'chunked' }, /must not set transfer-encoding/],
    ['Connection', { Connection: 'close' }, /must not set Connection/],
    ['Keep-Alive', { 'Keep-Alive': 'timeout=5' }, /must not set Keep-Alive/],
    ['Upgrade', { Upgrade: 'websocket' }, /must not set Upgrade/],
    ['TE', { TE: 'trailers' }, /must not set TE/],
    ['Trailer', { Trailer: 'X-Checksum' }, /must not set Trailer/],
    ['Proxy-Authorization', { 'Proxy-Authorization': 'Basic eA==' }, /must not set Proxy-Authorization/],
    ['a line break in a value', { 'X-Tenant': 'a\r\nX-Injected: 1' }, /line breaks/],
    [
      'too many headers',
      Object.fromEntries(Array.from({ length: 33 }, (_, index) => [`X-H${index}`, 'v'])),
      /at most 32/,
    ],
    ['too many bytes', { 'X-Big': 'v'.repeat(9000) }, /at most 8192 are allowed/],
  ])(
    '400 suite.mcp.invalid_request for headers with %s, nothing stored, the server never called',
    async (_case, headers, message) => {
      const before = await suite.app.db
        .selectFrom('responses')
        .select(suite.app.db.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      const reply = await createResponse(suite.app, suite.key, {
        background: false,
        input: 'hi',
        tools: [server({ headers })],
      });
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({ error: { code: 'mcp.invalid_request', message: expect.stringMatching(message) } });
      const after = await suite.app.db
        .selectFrom('responses')
        .select(suite.app.db.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n));
      expect(suite.mcp.listings).toHaveLength(0);
    },
  );

  it('ordinary application headers still reach the server', async () => {
    const reply = await createResponse(suite.app, suite.key, {
      background: false,
      input: '/call whoami {}',
      tools: [server({ headers: { 'X-Tenant': 'acme' } })],
    });
    expect(reply.body.status).toBe('completed');
    expect(JSON.parse(reply.body.output[1].output)).toEqual({ authorization: null, tenant: 'acme' });
  });
});
