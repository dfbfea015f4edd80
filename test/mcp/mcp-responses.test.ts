import { createResponse, openCreateStream, waitForFinal } from '../responses/helpers';
import { useMcpSuite } from './mcp-suite';

/**
 * Remote MCP tools in Responses, over real HTTP, against a real MCP server built with the official SDK on
 * loopback (test/mcp/mcp-test-server.ts). dev-echo's `/call NAME JSON` names an MCP tool; `/then` chains turns.
 */
describe('Responses with remote MCP tools (dev-echo)', () => {
  const suite = useMcpSuite();

  const { server } = suite;
  const { create } = suite;

  it('one call: lists the tools, calls the tool with the arguments, feeds the result back, bills the two model turns once', async () => {
    const reply = await create({ input: '/call add {"a": 2, "b": 40}', tools: [server()] });
    expect(reply.status).toBe(200);
    const response = reply.body;
    expect(response.status).toBe('completed');
    expect(response.output.map((item: any) => item.type)).toEqual(['mcp_list_tools', 'mcp_call', 'message']);
    const [listing, call, message] = response.output;
    expect(listing).toEqual({
      id: expect.stringMatching(/^mcpl_/),
      type: 'mcp_list_tools',
      server_label: 'calc',
      tools: expect.any(Array),
      error: null,
    });
    expect(listing.tools.map((tool: any) => tool.name).sort()).toEqual([
      'add',
      'explode',
      'fail',
      'flood',
      'shout',
      'slow',
      'whoami',
    ]);
    expect(listing.tools.find((tool: any) => tool.name === 'add')).toEqual({
      name: 'add',
      description: 'Adds two numbers.',
      input_schema: expect.objectContaining({
        type: 'object',
        properties: expect.objectContaining({ a: expect.anything() }),
      }),
    });
    expect(call).toEqual({
      id: expect.stringMatching(/^mcp_/),
      type: 'mcp_call',
      server_label: 'calc',
      name: 'add',
      arguments: '{"a": 2, "b": 40}',
      output: '42',
      error: null,
      status: 'completed',
    });
    expect(message.content[0].text).toBe('Tool add returned: 42');
    expect(suite.mcp.calls).toEqual([expect.objectContaining({ tool: 'add', args: { a: 2, b: 40 } })]);

    // Both turns are billed: usage sums them, one debit.
    expect(response.usage.input_tokens).toBeGreaterThan(5);
    const transactions = (
      await suite.app.request('GET', '/v2/organization/transactions?limit=50', { key: suite.key })
    ).body.transactions.filter((row: any) => row.metadata.response_id === response.id);
    expect(transactions).toHaveLength(1);
    expect(transactions[0].usage).toEqual({
      prompt_tokens: response.usage.input_tokens,
      completion_tokens: response.usage.output_tokens,
      total_tokens: response.usage.total_tokens,
    });
  });

  it('several rounds: each turn calls the next tool with the results so far', async () => {
    const reply = await create({
      input: '/call add {"a": 1, "b": 2} /then /call shout {"text": "done"} /then /call add {"a": 10, "b": 20}',
      tools: [server()],
    });
    expect(reply.body.status).toBe('completed');
    expect(reply.body.output.map((item: any) => `${item.type}:${item.name ?? ''}:${item.output ?? ''}`)).toEqual([
      'mcp_list_tools::',
      'mcp_call:add:3',
      'mcp_call:shout:DONE',
      'mcp_call:add:30',
      'message::',
    ]);
    expect(suite.mcp.calls.map((call) => call.tool)).toEqual(['add', 'shout', 'add']);
    // Listed once for the whole Response.
    expect(suite.mcp.listings).toHaveLength(1);
  });

  it('allowed_tools limits what is listed and callable; the token and headers reach the server and no stored copy shows them', async () => {
    const secret = 'tenant-secret-header-value';
    const reply = await create({
      input: '/call whoami {}',
      tools: [
        server({
          server_url: `${suite.mcp.url}/secure/mcp`,
          authorization: suite.mcp.token,
          headers: { 'X-Tenant': secret },
          allowed_tools: ['whoami', 'add'],
        }),
      ],
    });
    expect(reply.body.status).toBe('completed');
    expect(reply.body.output[0].tools.map((tool: any) => tool.name).sort()).toEqual(['add', 'whoami']);
    expect(JSON.parse(reply.body.output[1].output)).toEqual({
      authorization: `Bearer ${suite.mcp.token}`,
      tenant: secret,
    });
    // The Response as returned, read back and listed, and the conversation items: no token, no header value.
    const read = await suite.app.request('GET', `/v2/responses/${reply.body.id}`, { key: suite.key });
    for (const body of [reply.body, read.body]) {
      expect(JSON.stringify(body.tools)).not.toContain(suite.mcp.token);
      expect(JSON.stringify(body.tools)).not.toContain(secret);
      expect(body.tools[0]).toEqual({
        type: 'mcp',
        server_label: 'calc',
        server_url: `${suite.mcp.url}/secure/mcp`,
        allowed_tools: ['whoami', 'add'],
        require_approval: 'never',
      });
    }

    // A tool outside allowed_tools is not offered: dev-echo's call of it is an ordinary function call for the client.
    const outside = await create({ input: '/call shout {"text": "x"}', tools: [server({ allowed_tools: ['add'] })] });
    expect(outside.body.output.map((item: any) => item.type)).toEqual(['mcp_list_tools', 'function_call']);
    expect(suite.mcp.calls.filter((call) => call.tool === 'shout')).toHaveLength(0);
  });

  it('a server that requires a token refuses a request without it: the listing reports the error and the model answers without tools', async () => {
    const reply = await create({
      input: 'hello there',
      tools: [server({ server_url: `${suite.mcp.url}/secure/mcp` })],
    });
    expect(reply.body.status).toBe('completed');
    expect(reply.body.output[0]).toMatchObject({
      type: 'mcp_list_tools',
      tools: [],
      error: expect.stringMatching(/calc/),
    });
    expect(reply.body.output[1].content[0].text).toBe('hello there');
  });

  it('the older HTTP+SSE transport: a server that only speaks it is listed and called', async () => {
    const reply = await create({
      input: '/call add {"a": 5, "b": 6}',
      tools: [server({ server_url: `${suite.mcp.url}/sse` })],
    });
    expect(reply.body.status).toBe('completed');
    expect(reply.body.output[1]).toMatchObject({ type: 'mcp_call', output: '11', error: null });
    expect(suite.mcp.calls).toEqual([expect.objectContaining({ path: '/sse', tool: 'add' })]);
  });

  it('a failing tool (isError), a throwing tool and bad arguments are errors told to the model, not crashes', async () => {
    const failing = await create({ input: '/call fail {}', tools: [server()] });
    expect(failing.body.status).toBe('completed');
    expect(failing.body.output[1]).toMatchObject({
      type: 'mcp_call',
      name: 'fail',
      output: null,
      error: 'the database is on fire',
      status: 'failed',
    });
    expect(failing.body.output[2].content[0].text).toBe('Tool fail returned: Error: the database is on fire');

    const throwing = await create({ input: '/call explode {}', tools: [server()] });
    expect(throwing.body.output[1]).toMatchObject({
      type: 'mcp_call',
      output: null,
      error: expect.stringContaining('kaboom'),
    });

    const badArguments = await create({ input: '/call add [1, 2]', tools: [server()] });
    expect(badArguments.body.output[1]).toMatchObject({
      type: 'mcp_call',
      error: 'The arguments are not a JSON object.',
    });
    expect(suite.mcp.calls.filter((call) => call.tool === 'add')).toHaveLength(0);
  });

  it('a tool that outlasts MCP_TOOL_TIMEOUT_MS is an error result; an unreachable server is a listing error', async () => {
    const slow = await create({ input: '/call slow {"ms": 20000}', tools: [server()] });
    expect(slow.body.status).toBe('completed');
    expect(slow.body.output[1]).toMatchObject({
      type: 'mcp_call',
      name: 'slow',
      output: null,
      error: expect.stringMatching(/time/i),
    });

    const unreachable = await create({ input: 'hi', tools: [server({ server_url: 'http://127.0.0.1:9/mcp' })] });
    expect(unreachable.body.status).toBe('completed');
    expect(unreachable.body.output[0]).toMatchObject({
      type: 'mcp_list_tools',
      error: expect.stringMatching(/Could not connect/),
    });
  });

  it('cancel during a slow tool aborts the call in flight and ends the Response cancelled', async () => {
    const created = await createResponse(suite.app, suite.key, {
      background: true,
      input: '/call slow {"ms": 60000}',
      tools: [server()],
    });
    expect(created.status).toBe(200);
    await suite.mcp.waitForCalls('slow', 1);
    const cancelled = await suite.app.request('POST', `/v2/responses/${created.body.id}/cancel`, { key: suite.key });
    expect(cancelled.status).toBe(200);
    await suite.mcp.waitForAbort('slow');
    const final = await waitForFinal(suite.app, suite.key, created.body.id);
    expect(final.status).toBe('cancelled');
  });

  it('SSE: listing, call and answer events in order, then the conversation holds the MCP items; a follow-up reuses the listing', async () => {
    const conversation = (await suite.app.request('POST', '/v2/conversations', { key: suite.key, body: {} })).body.id;
    const stream = await openCreateStream(suite.app, suite.key, {
      input: '/call add {"a": 1, "b": 1}',
      tools: [server()],
      conversation,
    });
    const events = await stream.readAll();
    const types = events.map((event) => event.event);
    const sequence = events.map((event) => event.data.sequence_number);
    expect(sequence).toEqual([...sequence].sort((a, b) => a - b));
    expect(new Set(sequence).size).toBe(sequence.length);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.mcp_list_tools.in_progress',
      'response.mcp_list_tools.completed',
      'response.output_item.done',
      'response.output_item.added',
      'response.mcp_call_arguments.done',
      'response.mcp_call.in_progress',
      'response.mcp_call.completed',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      ...types.filter((type) => type === 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const callDone = events.filter((event) => event.event === 'response.output_item.done')[1]!;
    expect(callDone.data.item).toMatchObject({ type: 'mcp_call', output: '2', status: 'completed' });

    const items = (
      await suite.app.request('GET', `/v2/conversations/${conversation}/items?order=asc`, { key: suite.key })
    ).body.data;
    expect(items.map((item: any) => item.type)).toEqual(['message', 'mcp_list_tools', 'mcp_call', 'message']);
    expect(items[2]).toMatchObject({
      server_label: 'calc',
      name: 'add',
      arguments: '{"a": 1, "b": 1}',
      output: '2',
      error: null,
    });
    expect(JSON.stringify(items)).not.toContain('authorization');

    // The follow-up in the same conversation does not list again, and the model sees the earlier call.
    const listingsBefore = suite.mcp.listings.length;
    const followUp = await create({ input: '/call add {"a": 2, "b": 2}', tools: [server()], conversation });
    expect(followUp.body.output.map((item: any) => item.type)).toEqual(['mcp_call', 'message']);
    expect(followUp.body.output[0].output).toBe('4');
    expect(suite.mcp.listings.length).toBe(listingsBefore);

    // In a previous_response_id chain too (its first link lists, the next reuses).
    const first = await create({ input: 'no tools needed', tools: [server()] });
    expect(first.body.output[0].type).toBe('mcp_list_tools');
    const chained = await create({
      input: '/call add {"a": 3, "b": 3}',
      tools: [server()],
      previous_response_id: first.body.id,
    });
    expect(chained.body.output.map((item: any) => item.type)).toEqual(['mcp_call', 'message']);
    expect(suite.mcp.listings.length).toBe(listingsBefore + 1);
  });
});
