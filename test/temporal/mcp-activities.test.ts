import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, type Activities } from '../../src/engine/job-kinds';
import { newId } from '../../src/ids';
import type { McpListing, McpServerSpec } from '../../src/mcp/mcp-types';
import { storedRequest } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { startMcpTestServer, type McpTestServer } from '../mcp/mcp-test-server';
import { quietLogger } from './workflow-bundle';

/**
 * The MCP activities inside Temporal's MockActivityEnvironment, against a real database and a real MCP
 * server: a tool call runs at most once however often the activity runs (a Temporal retry, a replay after a
 * worker loss), and a cancellation aborts the call in flight and is rethrown (not reported as a result).
 */
describe('MCP activities under MockActivityEnvironment', () => {
  let app: TestApp;
  let mcp: McpTestServer;
  let accountId: string;
  let activities: Activities;

  beforeAll(async () => {
    mcp = await startMcpTestServer();
    app = await TestApp.start();
    ({ accountId } = await app.createAccount({ mcpEnabled: true }));
    const { db, logger, events, webhooks, catalog, providers, ledger } = app.runtime.deps;
    activities = createActivities({
      db,
      logger,
      events,
      webhooks,
      catalog,
      providers,
      ledger,
      mcpSessions: app.runtime.deps.mcpSessions,
    });
  });
  afterAll(async () => {
    await app.close();
    await mcp.close();
  });
  beforeEach(() => mcp.reset());

  const environment = (activityType: string) =>
    new MockActivityEnvironment({ activityType, heartbeatTimeoutMs: 20_000 }, { logger: quietLogger });

  async function insertResponse(server: Partial<McpServerSpec> = {}) {
    const id = newId('resp');
    const tools = [
      {
        type: 'mcp',
        server_label: 'calc',
        server_url: `${mcp.url}/mcp`,
        require_approval: 'never',
        ...server,
      } as McpServerSpec,
    ];
    await app.db
      .insertInto('responses')
      .values({
        id,
        account_id: accountId,
        status: 'in_progress',
        background: true,
        model: 'dev-echo',
        vendor: 'dev',
        conversation_id: null,
        request: JSON.stringify(storedRequest('hi', { tools })),
        metadata: '{}',
      })
      .execute();
    return id;
  }

  it('listMcpTools lists the allowed tools, heartbeating; an unreachable server is an item with the error', async () => {
    const responseId = await insertResponse({ allowed_tools: ['add'] });
    const listing: McpListing = await environment('listMcpTools').run(activities.listMcpTools, { responseId });
    expect(listing.servers).toEqual([{ serverLabel: 'calc', tools: [expect.objectContaining({ name: 'add' })] }]);
    expect(listing.items).toEqual([
      expect.objectContaining({ type: 'mcp_list_tools', server_label: 'calc', error: null }),
    ]);

    const unreachable = await insertResponse({ server_url: 'http://127.0.0.1:9/mcp' });
    const failed: McpListing = await environment('listMcpTools').run(activities.listMcpTools, {
      responseId: unreachable,
    });
    expect(failed.items[0]).toMatchObject({
      tools: [],
      error: expect.stringMatching(/Could not connect to the MCP server "calc"/),
    });
  });

  it('callMcpTool runs a call once: a second run returns the stored result without calling the server', async () => {
    const responseId = await insertResponse();
    const call = { itemId: newId('mcp'), serverLabel: 'calc', name: 'add', arguments: '{"a": 4, "b": 5}' };
    const first = await environment('callMcpTool').run(activities.callMcpTool, { responseId, call });
    const again = await environment('callMcpTool').run(activities.callMcpTool, { responseId, call });
    expect(first).toEqual({ itemId: call.itemId, output: '9', error: null });
    expect(again).toEqual(first);
    expect(mcp.calls).toHaveLength(1);
  });

  it('a cancellation aborts the tool in flight and is rethrown; the call is then never repeated', async () => {
    const responseId = await insertResponse();
    const call = { itemId: newId('mcp'), serverLabel: 'calc', name: 'slow', arguments: '{"ms": 60000}' };
    const env = environment('callMcpTool');
    const running = env.run(activities.callMcpTool, { responseId, call });
    await mcp.waitForCalls('slow', 1);
    env.cancel();
    await expect(running).rejects.toThrow();
    await mcp.waitForAbort('slow');
    // A run after the loss of the first (a retry elsewhere) does not call it again.
    const retried = await environment('callMcpTool').run(activities.callMcpTool, { responseId, call });
    expect(retried).toEqual({ itemId: call.itemId, output: null, error: expect.stringMatching(/not repeated/) });
    expect(mcp.calls.filter((seen) => seen.tool === 'slow')).toHaveLength(1);
  });
});
