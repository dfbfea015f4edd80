import fs from 'node:fs';
import { pollUntil } from '../responses/helpers';
import {
  callServer,
  killServer,
  newServerAccount,
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
 * replayed rather than repeated (the MCP server sees each call once), and it is billed once. Killed while the MCP
 * server executes a tool: the call is not repeated (it may have run), the model is told it was interrupted.
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

  /** A background Response of dev-echo following `input`, with the test server's tools; its id. */
  async function createLoop(on: ServerProcess, auth: Record<string, string>, input: string): Promise<string> {
    const created = await callServer(
      on,
      'POST',
      '/v2/responses',
      {
        model: 'dev-echo',
        input,
        tools: [{ type: 'mcp', server_label: 'calc', server_url: `${mcp.url}/mcp`, require_approval: 'never' }],
      },
      auth,
    );
    expect(created.status).toBe(200);
    return created.body.id as string;
  }

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
    const id = await createLoop(
      server,
      auth,
      '/call add {"a": 1, "b": 2} /then /delay 3000 /call shout {"text": "again"}',
    );
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

  it('a kill while the MCP server runs the tool: not called again; the model is told it was interrupted; completed, one debit', async () => {
    mcp.reset();
    server = await startServerProcess(storage, { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' });
    const { key, auth } = await newServerAccount(server, {
      name: 'mcp-crash-in-tool',
      balance: 1_000_000,
      mcp_enabled: true,
    });
    // The model calls slow, which runs on the MCP server for 60 s: the process dies while the server executes it.
    const id = await createLoop(server, auth, '/call slow {"ms": 60000}');
    await mcp.waitForCalls('slow', 1);
    await killServer(server);
    // The server noticed its client gone (the call's connection closed with the process).
    await mcp.waitForAbort('slow');

    server = await startServerProcess(storage, { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' });
    const read = () => callServer(server!, 'GET', `/v2/responses/${id}`, undefined, auth).then((reply) => reply.body);
    const final = await pollUntil(read, (body) => !['queued', 'in_progress'].includes(body.status), 30_000);
    // docs/guide.md, MCP durability: a call in flight when its process died may have run, so it is not repeated (at
    // most once, by its claim in mcp_calls); the model gets it as interrupted and answers on.
    const interrupted = 'The call was interrupted (the service restarted) and was not repeated.';
    expect(final).toMatchObject({ status: 'completed', error: null });
    expect(final.output.map((item: any) => [item.type, item.name ?? null, item.error ?? null])).toEqual([
      ['mcp_list_tools', null, null],
      ['mcp_call', 'slow', interrupted],
      ['message', null, null],
    ]);
    expect(final.output[2].content[0].text).toBe(`Tool slow returned: Error: ${interrupted}`);
    expect(mcp.calls.map((call) => call.tool)).toEqual(['slow']);
    // Its events as stored: contiguous, and the same Response the GET shows.
    const events = (
      await (await SseStream.open(`${server.baseUrl}/v2/responses/${id}?stream=true`, { key })).readAll()
    ).map((event) => event.data);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.filter((event) => event.type === 'response.mcp_call.failed')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { output: final.output } });
    const transactions = await callServer(server, 'GET', '/v2/organization/transactions?limit=200', undefined, auth);
    const debits = transactions.body.transactions.filter((row: any) => row.metadata.response_id === id);
    expect(debits).toHaveLength(1);
    expect((await callServer(server, 'GET', '/v2/organization/balance', undefined, auth)).body).toEqual({
      balance: 1_000_000 - debits[0].amount,
      available: 1_000_000 - debits[0].amount,
    });
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
