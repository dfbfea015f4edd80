import { connectMcpServer, McpConnectionError, scrubbedMessage } from '../../src/mcp/mcp-client';
import { createMcpSessionPool } from '../../src/mcp/mcp-sessions';
import type { McpServerSpec } from '../../src/mcp/mcp-types';
import { startMcpTestServer, type McpTestServer } from './mcp-test-server';

/** The MCP client and session pool against the real test server: the connect-time SSRF guard, reuse, secrets. */
describe('MCP client', () => {
  let mcp: McpTestServer;
  beforeAll(async () => {
    mcp = await startMcpTestServer();
  });
  afterAll(() => mcp.close());
  beforeEach(() => mcp.reset());

  const spec = (overrides: Partial<McpServerSpec> = {}): McpServerSpec => ({
    type: 'mcp',
    server_label: 'calc',
    server_url: `${mcp.url}/mcp`,
    require_approval: 'never',
    ...overrides,
  });
  const signal = new AbortController().signal;

  it('refuses to connect to a private address when the policy says so (the guard at connect time), without calling the server', async () => {
    const error = await connectMcpServer(spec(), { allowPrivateNetworks: false, timeoutMs: 5_000, signal }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(McpConnectionError);
    expect((error as Error).message).toMatch(/refused to connect to 127\.0\.0\.1: a loopback address/);
    expect(mcp.calls).toEqual([]);
  });

  it('a pool reuses one session per Response and server: one listing and three calls, one connection handshake', async () => {
    const pool = createMcpSessionPool({ allowPrivateNetworks: true, toolTimeoutMs: 5_000 });
    try {
      await pool.use('resp_a', spec(), signal, (session) => session.listTools(signal));
      const results = await Promise.all(
        [1, 2, 3].map((n) =>
          pool.use('resp_a', spec(), signal, (session) => session.callTool('add', { a: n, b: n }, signal)),
        ),
      );
      expect(results.map((result) => result.output)).toEqual(['2', '4', '6']);
      expect(pool.size).toBe(1);
      // Another Response gets its own session.
      await pool.use('resp_b', spec(), signal, (session) => session.callTool('add', { a: 0, b: 0 }, signal));
      expect(pool.size).toBe(2);
      // A Response that ended releases its sessions.
      pool.release('resp_a');
      expect(pool.size).toBe(1);
    } finally {
      await pool.close();
    }
  });

  it('a cancelled call closes its session (the server sees the request go away); the next use opens a new one', async () => {
    const pool = createMcpSessionPool({ allowPrivateNetworks: true, toolTimeoutMs: 60_000 });
    try {
      const controller = new AbortController();
      const running = pool.use('resp_c', spec(), controller.signal, (session) =>
        session.callTool('slow', { ms: 60_000 }, controller.signal),
      );
      await mcp.waitForCalls('slow', 1);
      controller.abort();
      await expect(running).rejects.toThrow();
      await mcp.waitForAbort('slow');
      expect(pool.size).toBe(0);
      const next = await pool.use('resp_c', spec(), signal, (session) =>
        session.callTool('add', { a: 1, b: 1 }, signal),
      );
      expect(next.output).toBe('2');
    } finally {
      await pool.close();
    }
  });

  it('error texts lose the token and header values', () => {
    const message = scrubbedMessage(new Error('401 for Bearer tok-123456 with X-Key: hdr-abcdef'), {
      authorization: 'tok-123456',
      headers: { 'X-Key': 'hdr-abcdef' },
    });
    expect(message).toBe('401 for Bearer [redacted] with X-Key: [redacted]');
  });
});
