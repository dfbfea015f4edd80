import { createResponse } from '../responses/helpers';
import { useTestApp } from '../support/harness';

/** The gate and each 400 of MCP tools, with the default outbound policy (no private networks, https only). */
describe('Responses with MCP tools: gate and validation', () => {
  const suite = useTestApp({ app: { env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false' } } });
  const tool = (overrides: Record<string, unknown> = {}) => ({
    type: 'mcp',
    server_label: 'docs',
    server_url: 'https://mcp.example.com/mcp',
    require_approval: 'never',
    ...overrides,
  });

  const rowCounts = async () => {
    const responses = await suite.app.db
      .selectFrom('responses')
      .select(suite.app.db.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(responses.n);
  };

  it('403 mcp.forbidden until an operator enables MCP for the account', async () => {
    const reply = await createResponse(suite.app, suite.key, { input: 'hi', tools: [tool()] });
    expect([reply.status, reply.body.error.code]).toEqual([403, 'mcp.forbidden']);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'require_approval other than never',
      { tools: [tool({ require_approval: 'always' })] },
      /require_approval must be "never"/,
    ],
    [
      'two servers with one label',
      { tools: [tool(), tool({ server_url: 'https://other.example.com/mcp' })] },
      /used twice/,
    ],
    ['an http server_url', { tools: [tool({ server_url: 'http://mcp.example.com/mcp' })] }, /must use https/],
    ['a loopback server_url', { tools: [tool({ server_url: 'https://127.0.0.1/mcp' })] }, /loopback/],
    ['a private server_url', { tools: [tool({ server_url: 'https://10.1.2.3/mcp' })] }, /private/],
    ['localhost', { tools: [tool({ server_url: 'https://localhost:8443/mcp' })] }, /localhost/],
    ['credentials in the URL', { tools: [tool({ server_url: 'https://user:pw@mcp.example.com/mcp' })] }, /credentials/],
    [
      'tool_choice naming another server',
      { tools: [tool()], tool_choice: { type: 'mcp', server_label: 'nope' } },
      /"nope"/,
    ],
    [
      'an Authorization header in headers',
      { tools: [tool({ headers: { Authorization: 'Bearer x' } })] },
      /use authorization/,
    ],
    ['an invalid header name', { tools: [tool({ headers: { 'bad header': 'x' } })] }, /invalid header name/],
  ])('400 mcp.invalid_request for %s, nothing stored', async (_case, body, message) => {
    const enabled = await suite.app.createAccount({ mcpEnabled: true });
    const before = await rowCounts();
    const reply = await createResponse(suite.app, enabled.key, { input: 'hi', ...body });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error: { code: 'mcp.invalid_request', message: expect.stringMatching(message) } });
    expect(await rowCounts()).toBe(before);
  });

  it('the secrets of a refused request are not repeated in its error', async () => {
    const enabled = await suite.app.createAccount({ mcpEnabled: true });
    const reply = await createResponse(suite.app, enabled.key, {
      input: 'hi',
      tools: [
        tool({
          server_url: 'http://127.0.0.1/mcp',
          authorization: 'sekrit-token-123',
          headers: { 'X-Key': 'sekrit-header-456' },
        }),
      ],
    });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body)).not.toMatch(/sekrit/);
  });
});
