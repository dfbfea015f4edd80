import { createResponse } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { startMcpTestServer, type McpTestServer } from './mcp-test-server';

/**
 * Jest hooks for the MCP tests: the app (MCP servers on loopback allowed, `env` over a 5 s tool timeout), the real MCP
 * test server (test/mcp/mcp-test-server.ts, reset before each test) and an MCP-enabled account; with the tool spec of
 * that server (`server`) and a synchronous Response creation (`create`).
 */
export function useMcpSuite(env: Record<string, string> = {}) {
  let app: TestApp;
  let mcp: McpTestServer;
  let key: string;
  beforeAll(async () => {
    mcp = await startMcpTestServer();
    app = await TestApp.start({
      env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true', MCP_TOOL_TIMEOUT_MS: '5000', ...env },
    });
    ({ key } = await app.createAccount({ mcpEnabled: true, balance: 1_000_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await mcp?.close();
  });
  beforeEach(() => mcp.reset());
  return {
    get app() {
      return app;
    },
    get mcp() {
      return mcp;
    },
    get key() {
      return key;
    },
    /** The test server's tool spec (label `calc`, no approval), with `overrides`. */
    server: (overrides: Record<string, unknown> = {}) => ({
      type: 'mcp',
      server_label: 'calc',
      server_url: `${mcp.url}/mcp`,
      require_approval: 'never',
      ...overrides,
    }),
    /** A synchronous Response of the account (`body` over `background: false`). */
    create: (body: Record<string, unknown>) => createResponse(app, key, { background: false, ...body }),
  };
}
