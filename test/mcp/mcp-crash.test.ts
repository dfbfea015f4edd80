import fs from 'node:fs';
import { pollUntil } from '../responses/helpers';
import {
  callServer,
  killServer,
  newServerStorage,
  startServerProcess,
  type ServerProcess,
  type ServerStorage,
} from '../support/crash-server';
import { ADMIN_TOKEN, dropSchema } from '../support/harness';
import { SseStream } from '../support/sse';
import { startMcpTestServer, type McpTestServer } from './mcp-test-server';

/**
 * A server killed (SIGKILL) in the middle of an MCP loop (after the first tool call, while the model's
 * second turn runs), then started again on the same storage: the Response completes, the finished call is
 * replayed rather than repeated (the MCP server sees each call once), and it is billed once.
 */
describe('an MCP loop across a crash', () => {
  let storage: ServerStorage;
  let server: ServerProcess | undefined;
  let mcp: McpTestServer;

  beforeAll(async () => {
    storage = await newServerStorage('switchyard-mcp-crash-');
    mcp = await startMcpTestServer();
  });
  afterAll(async () => {
    await killServer(server);
    await mcp.close();
    fs.rmSync(storage.dataDir, { recursive: true, force: true });
    if (storage.schema) await dropSchema(storage.schema);
  });

  it('the restarted service finishes the loop; each tool is called once; one debit', async () => {
    const env = { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' };
    server = await startServerProcess(storage, env);
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const account = await callServer(
      server,
      'POST',
      '/admin/accounts',
      { name: 'mcp-crash', balance: 1_000_000, mcp_enabled: true },
      admin,
    );
    const key = (await callServer(server, 'POST', `/admin/accounts/${account.body.id}/keys`, {}, admin)).body
      .key as string;
    const auth = { 'x-auth-token': key };

    // Turn 1 calls add; turn 2 waits 3 s (`/delay`) before calling shout: the process dies in that wait.
    const created = await callServer(
      server,
      'POST',
      '/v2/responses',
      {
        model: 'dev-echo',
        input: '/call add {"a": 1, "b": 2} /then /delay 3000 /call shout {"text": "again"}',
        tools: [{ type: 'mcp', server_label: 'calc', server_url: `${mcp.url}/mcp`, require_approval: 'never' }],
      },
      auth,
    );
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const stream = await SseStream.open(`${server.baseUrl}/v2/responses/${id}?stream=true`, { key });
    // The second turn has started: it stored the first call's result events.
    await stream.readUntil((event) => event.event === 'response.mcp_call.completed');
    stream.abort();
    await killServer(server);
    expect(mcp.calls.map((call) => call.tool)).toEqual(['add']);

    server = await startServerProcess(storage, env);
    const read = () => callServer(server!, 'GET', `/v2/responses/${id}`, undefined, auth).then((reply) => reply.body);
    const final = await pollUntil(read, (body) => !['queued', 'in_progress'].includes(body.status), 30_000);
    expect(final.status).toBe('completed');
    expect(final.output.map((item: any) => `${item.type}:${item.name ?? ''}:${item.output ?? ''}`)).toEqual([
      'mcp_list_tools::',
      'mcp_call:add:3',
      'mcp_call:shout:AGAIN',
      'message::',
    ]);
    expect(mcp.calls.map((call) => call.tool)).toEqual(['add', 'shout']);
    const transactions = await callServer(server, 'GET', '/v2/organization/transactions?limit=200', undefined, auth);
    expect(transactions.body.transactions.filter((row: any) => row.metadata.response_id === id)).toHaveLength(1);
  }, 90_000);

  it('the token and header values never reach the logs, even at trace level and on failures', async () => {
    await killServer(server);
    server = await startServerProcess(storage, { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'trace' });
    let logs = '';
    server.child.stdout!.on('data', (chunk) => (logs += chunk));
    server.child.stderr!.on('data', (chunk) => (logs += chunk));
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const account = await callServer(
      server,
      'POST',
      '/admin/accounts',
      { name: 'mcp-logs', balance: 1_000_000, mcp_enabled: true },
      admin,
    );
    const key = (await callServer(server, 'POST', `/admin/accounts/${account.body.id}/keys`, {}, admin)).body
      .key as string;
    const secretHeader = 'x-tenant-secret-value-9876';
    const wrongToken = 'wrong-token-value-5432';
    const bodies = [
      // A refused listing (wrong token), a failing tool, a throwing tool, and a good call, each with the secrets.
      { input: 'hi', server: { server_url: `${mcp.url}/secure/mcp`, authorization: wrongToken } },
      { input: '/call fail {}', server: { server_url: `${mcp.url}/secure/mcp`, authorization: mcp.token } },
      { input: '/call explode {}', server: { server_url: `${mcp.url}/secure/mcp`, authorization: mcp.token } },
      { input: '/call whoami {}', server: { server_url: `${mcp.url}/secure/mcp`, authorization: mcp.token } },
    ];
    for (const body of bodies) {
      const reply = await callServer(
        server,
        'POST',
        '/v2/responses',
        {
          model: 'dev-echo',
          input: body.input,
          background: false,
          tools: [
            {
              type: 'mcp',
              server_label: 'calc',
              require_approval: 'never',
              headers: { 'X-Tenant': secretHeader },
              ...body.server,
            },
          ],
        },
        { 'x-auth-token': key },
      );
      expect(reply.status).toBe(200);
      expect(JSON.stringify(reply.body)).not.toContain(wrongToken);
    }
    await killServer(server);
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of [mcp.token, wrongToken, secretHeader]) expect(logs).not.toContain(secret);
  }, 60_000);
});
