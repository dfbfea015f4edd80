import { useMcpSuite } from './mcp-suite';

/**
 * Issue 34, MCP: two servers offering tools of the same name get them namespaced by `server_label`
 * (`<label>__<tool>`, as OpenAI does), and a call is routed to the server it names; `authorization` is taken with
 * or without its `Bearer ` prefix and sent once (never `Bearer Bearer`). Against the real MCP test server: its plain
 * endpoint and its token-protected one (whose `whoami` answers the Authorization header it received).
 */
describe('MCP: tool names across servers, and the authorization prefix', () => {
  const suite = useMcpSuite();

  const servers = (authorization: string) => [
    { type: 'mcp', server_label: 'open', server_url: `${suite.mcp.url}/mcp`, require_approval: 'never' },
    {
      type: 'mcp',
      server_label: 'locked',
      server_url: `${suite.mcp.url}/secure/mcp`,
      require_approval: 'never',
      authorization,
    },
  ];
  const { create } = suite;

  it('a tool both servers offer is namespaced by server_label, and each call reaches the server it names', async () => {
    const reply = await create({
      input: '/call locked__whoami {} /then /call open__add {"a": 1, "b": 2}',
      tools: servers(suite.mcp.token),
    });
    expect(reply.status).toBe(200);
    expect(reply.body.status).toBe('completed');
    const calls = reply.body.output.filter((item: any) => item.type === 'mcp_call');
    expect(calls.map((call: any) => [call.server_label, call.name, call.status])).toEqual([
      ['locked', 'whoami', 'completed'],
      ['open', 'add', 'completed'],
    ]);
    // whoami ran on the token-protected server: it saw the token.
    expect(JSON.parse(calls[0].output).authorization).toBe(`Bearer ${suite.mcp.token}`);
    expect(calls[1].output).toBe('3');
    expect(reply.body.output.some((item: any) => item.type === 'function_call')).toBe(false);
  });

  it('a bare name both servers offer is not a client function call: the model is told which names to use', async () => {
    const reply = await create({ input: '/call add {"a": 1, "b": 2}', tools: servers(suite.mcp.token) });
    expect(reply.status).toBe(200);
    expect(reply.body.status).toBe('completed');
    expect(reply.body.output.some((item: any) => item.type === 'function_call')).toBe(false);
    const [call] = reply.body.output.filter((item: any) => item.type === 'mcp_call');
    expect(call).toMatchObject({ name: 'add', status: 'failed', output: null });
    expect(call.error).toMatch(/offered by more than one MCP server \(open, locked\); call open__add or locked__add/);
    expect(suite.mcp.calls).toEqual([]);
  });

  it('authorization with its Bearer prefix is sent once, as without it', async () => {
    for (const authorization of [`Bearer ${suite.mcp.token}`, suite.mcp.token, `bearer ${suite.mcp.token}`]) {
      suite.mcp.reset();
      const reply = await create({ input: '/call locked__whoami {}', tools: servers(authorization) });
      expect(reply.body.status).toBe('completed');
      const [call] = reply.body.output.filter((item: any) => item.type === 'mcp_call');
      expect(call.error).toBeNull();
      expect(JSON.parse(call.output).authorization).toBe(`Bearer ${suite.mcp.token}`);
    }
  });
});
