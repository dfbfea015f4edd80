import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { startMcpTestServer, type McpTestServer } from '../mcp/mcp-test-server';
import { TestApp, useTestApp } from '../support/harness';
import { createResponse, openCreateStream, openResumeStream, readUntilFirstDelta, waitForFinal } from './helpers';

/**
 * A conversation learns of a turn as it happens (spec: Conversation item status `in_progress`; api-decisions 30):
 * the input at the Response's creation, its message `in_progress` while it generates, `completed` at the end; a
 * Response that fails or is cancelled keeps its input and loses its partial output; several Responses at once on
 * one conversation keep their order, and each one's context is what came before its input, without items in
 * progress and without its own input twice (message_limit counts those items).
 */

const LONG = '/delay 100 /words 300'; // 4 words of input; 30 s of output: only a cancel ends it within a test

async function newConversation(app: TestApp, key: string): Promise<string> {
  const reply = await app.request('POST', '/v2/conversations', { key, body: {} });
  expect(reply.status).toBe(200);
  return reply.body.id as string;
}

async function itemsOf(app: TestApp, key: string, conversation: string): Promise<any[]> {
  const reply = await app.request('GET', `/v2/conversations/${conversation}/items?order=asc&limit=100`, { key });
  expect(reply.status).toBe(200);
  return reply.body.data as any[];
}

/** The conversation's items once `ready` holds for them (a turn's items are written beside its stream). */
async function itemsWhen(
  app: TestApp,
  key: string,
  conversation: string,
  ready: (items: any[]) => boolean,
): Promise<any[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const items = await itemsOf(app, key, conversation);
    if (ready(items)) return items;
    if (Date.now() > deadline) throw new Error(`the conversation never got there: ${JSON.stringify(items)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const summary = (items: any[]) =>
  items.map((item) => `${item.role}:${item.status}:${item.content.map((part: any) => part.text).join('')}`);

describe('conversation turns as they happen (dev-echo)', () => {
  const suite = useTestApp();

  it('shows the input at creation, the message in progress while it generates, completed at the end', async () => {
    const conversation = await newConversation(suite.app, suite.key);
    const created = await createResponse(suite.app, suite.key, { conversation, input: '/delay 150 one two three' });
    expect(created.status).toBe(200);
    const id = created.body.id;
    // The input is there as soon as the Response exists, whatever its status by now.
    const atCreation = await itemsOf(suite.app, suite.key, conversation);
    expect(atCreation[0]).toMatchObject({
      id: `msg_${id.slice(5)}_in0`,
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_text', text: '/delay 150 one two three' }],
      response_id: id,
    });

    const stream = await openResumeStream(suite.app, suite.key, id);
    const head = await readUntilFirstDelta(stream);
    const messageId = head.at(-1)!.data.item_id;
    const generating = await itemsWhen(suite.app, suite.key, conversation, (items) => items.length === 2);
    expect(generating[1]).toEqual({
      id: messageId,
      object: 'conversation.item',
      type: 'message',
      role: 'assistant',
      status: 'in_progress',
      content: [],
      created_at: expect.any(Number),
      metadata: {},
      response_id: id,
    });
    // One item, read alone, says the same.
    const one = await suite.app.request('GET', `/v2/conversations/${conversation}/items/${messageId}`, {
      key: suite.key,
    });
    expect(one.body.status).toBe('in_progress');

    await stream.readAll();
    const done = await waitForFinal(suite.app, suite.key, id);
    expect(done.status).toBe('completed');
    const after = await itemsOf(suite.app, suite.key, conversation);
    expect(summary(after)).toEqual(['user:completed:/delay 150 one two three', 'assistant:completed:one two three']);
    expect(after.map((item) => item.id)).toEqual([atCreation[0].id, messageId]);
    expect(after[1]).toEqual({ ...generating[1], status: 'completed', content: done.output[0].content });
  });

  it('a failed Response keeps the input in its conversation, with no output', async () => {
    const conversation = await newConversation(suite.app, suite.key);
    const failed = await createResponse(suite.app, suite.key, { conversation, input: '/error', background: false });
    expect(failed.body).toMatchObject({ status: 'failed', output: [], error: { code: expect.any(String) } });
    const items = await itemsOf(suite.app, suite.key, conversation);
    expect(summary(items)).toEqual(['user:completed:/error']);
    expect(items[0].response_id).toBe(failed.body.id);
  });

  it('a Response cancelled while generating keeps the input and drops its partial message', async () => {
    const conversation = await newConversation(suite.app, suite.key);
    const stream = await openCreateStream(suite.app, suite.key, { conversation, input: LONG });
    const head = await readUntilFirstDelta(stream);
    const id = head[0].data.response.id;
    await itemsWhen(suite.app, suite.key, conversation, (items) => items[1]?.status === 'in_progress');
    const cancelled = await suite.app.request('POST', `/v2/responses/${id}/cancel`, { key: suite.key });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', output: [] });
    await stream.readAll();
    const items = await itemsOf(suite.app, suite.key, conversation);
    expect(summary(items)).toEqual([`user:completed:${LONG}`]);
  });

  it('several Responses on one conversation at once: order kept, no item in progress or own input in a context', async () => {
    const conversation = await newConversation(suite.app, suite.key);
    // A generates for a long time; its message is in progress in the conversation.
    const a = await openCreateStream(suite.app, suite.key, { conversation, input: LONG });
    const aId = (await readUntilFirstDelta(a))[0].data.response.id;
    await itemsWhen(suite.app, suite.key, conversation, (items) => items[1]?.status === 'in_progress');

    // B's context: A's input (4 words), not A's message in progress (message_limit counts the items a context can
    // have: the latest one is A's input), and its own input once (2 words).
    const b = await createResponse(suite.app, suite.key, {
      conversation,
      input: 'alpha beta',
      message_limit: 1,
      background: false,
    });
    expect([b.body.status, b.body.usage.input_tokens]).toEqual(['completed', 4 + 2]);
    // C's: A's input, B's input and answer, its own input once.
    const c = await createResponse(suite.app, suite.key, { conversation, input: 'gamma', background: false });
    expect([c.body.status, c.body.usage.input_tokens]).toEqual(['completed', 4 + 2 + 2 + 1]);
    const during = await itemsOf(suite.app, suite.key, conversation);
    expect(summary(during)).toEqual([
      `user:completed:${LONG}`,
      'assistant:in_progress:',
      'user:completed:alpha beta',
      'assistant:completed:alpha beta',
      'user:completed:gamma',
      'assistant:completed:gamma',
    ]);
    expect(during.map((item) => item.response_id)).toEqual([aId, aId, b.body.id, b.body.id, c.body.id, c.body.id]);

    const cancelled = await suite.app.request('POST', `/v2/responses/${aId}/cancel`, { key: suite.key });
    expect(cancelled.body.status).toBe('cancelled');
    await a.readAll();
    // A's partial message went; its input stayed where it was.
    expect(summary(await itemsOf(suite.app, suite.key, conversation))).toEqual([
      `user:completed:${LONG}`,
      'user:completed:alpha beta',
      'assistant:completed:alpha beta',
      'user:completed:gamma',
      'assistant:completed:gamma',
    ]);
  });
});

describe('conversation turns while Responses wait for a slot (one engine slot)', () => {
  const suite = useTestApp({ app: { env: { ENGINE_CONCURRENCY: '1' } } });

  it('a queued Response shows its input; cancelled, it keeps it; a later input is no earlier context', async () => {
    const conversation = await newConversation(suite.app, suite.key);
    const first = await createResponse(suite.app, suite.key, { conversation, input: LONG });
    const firstStream = await openResumeStream(suite.app, suite.key, first.body.id);
    await readUntilFirstDelta(firstStream); // the only slot is taken

    const waiting = await createResponse(suite.app, suite.key, { conversation, input: 'waiting my turn' });
    expect(waiting.body.status).toBe('queued');
    const dropped = await createResponse(suite.app, suite.key, { conversation, input: 'never mind' });
    const later = await createResponse(suite.app, suite.key, { conversation, input: 'and later still' });
    expect([dropped.body.status, later.body.status]).toEqual(['queued', 'queued']);
    const queued = await itemsWhen(suite.app, suite.key, conversation, (items) => items.length === 5);
    expect(summary(queued)).toEqual([
      `user:completed:${LONG}`,
      'assistant:in_progress:',
      'user:completed:waiting my turn',
      'user:completed:never mind',
      'user:completed:and later still',
    ]);

    // Cancelled while queued: its input stays.
    const cancelled = await suite.app.request('POST', `/v2/responses/${dropped.body.id}/cancel`, { key: suite.key });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', output: [] });
    // The first one ends; the two waiting ones run, in whichever order.
    await suite.app.request('POST', `/v2/responses/${first.body.id}/cancel`, { key: suite.key });
    await firstStream.readAll();
    const [waited, last] = await Promise.all([
      waitForFinal(suite.app, suite.key, waiting.body.id),
      waitForFinal(suite.app, suite.key, later.body.id),
    ]);
    // Each one's context is what came before its input: 'waiting my turn' sees the first input (4 words) and not
    // the inputs after it; 'and later still' sees all three inputs before it, and no answer (they came after it).
    expect([waited.status, waited.usage.input_tokens]).toEqual(['completed', 4 + 3]);
    expect([last.status, last.usage.input_tokens]).toEqual(['completed', 4 + 3 + 2 + 3]);
    const items = await itemsOf(suite.app, suite.key, conversation);
    expect(summary(items.slice(0, 4))).toEqual([
      `user:completed:${LONG}`,
      'user:completed:waiting my turn',
      'user:completed:never mind',
      'user:completed:and later still',
    ]);
    expect(summary(items.slice(4)).sort()).toEqual([
      'assistant:completed:and later still',
      'assistant:completed:waiting my turn',
    ]);
  });
});

describe('conversation turns: what the vendor is sent (fake OpenAI)', () => {
  let fake: FakeVendorServer;
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    app = await TestApp.start({ env: { OPENAI_API_KEY: 'sk-openai-fake-test-key', OPENAI_BASE_URL: fake.baseURL } });
    ({ key } = await app.createAccount({ balance: 10_000_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  const messagesSent = (index: number) =>
    (fake.requests[index]!.body.input as any[]).map((item) => {
      const text =
        typeof item.content === 'string' ? item.content : item.content.map((part: any) => part.text).join('');
      return `${item.role}:${text}`;
    });

  it('a concurrent Response is not sent the message in progress nor its own input twice; a vendor failure midway drops the partial message', async () => {
    const conversation = await newConversation(app, key);
    fake.script(
      { textChunks: ['Once', ' upon', ' a', ' time'], chunkDelayMs: 400, errorEventAfterDeltas: 2 },
      { text: 'Second answer.' },
    );
    const first = await openCreateStream(app, key, { model: 'gpt-4.1-mini', conversation, input: 'Tell a story.' });
    const firstId = (await readUntilFirstDelta(first))[0].data.response.id;
    await itemsWhen(app, key, conversation, (items) => items[1]?.status === 'in_progress');

    const second = await createResponse(app, key, {
      model: 'gpt-4.1-mini',
      conversation,
      input: 'And a poem.',
      background: false,
    });
    expect(second.body.status).toBe('completed');
    expect(messagesSent(1)).toEqual(['user:Tell a story.', 'user:And a poem.']);

    const events = await first.readAll();
    expect(events.at(-1)!.event).toBe('response.failed');
    const failed = await waitForFinal(app, key, firstId);
    expect(failed.output).toEqual([]);
    expect(summary(await itemsOf(app, key, conversation))).toEqual([
      'user:completed:Tell a story.',
      'user:completed:And a poem.',
      'assistant:completed:Second answer.',
    ]);

    // The next Response's context is the whole conversation, each item once.
    fake.script({ text: 'Third.' });
    const third = await createResponse(app, key, {
      model: 'gpt-4.1-mini',
      conversation,
      input: 'Thanks.',
      background: false,
    });
    expect(third.body.status).toBe('completed');
    expect(messagesSent(2)).toEqual([
      'user:Tell a story.',
      'user:And a poem.',
      'assistant:Second answer.',
      'user:Thanks.',
    ]);
  });
});

describe('conversation turns of an MCP loop (fake OpenAI, real MCP server)', () => {
  let fake: FakeVendorServer;
  let mcp: McpTestServer;
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    mcp = await startMcpTestServer();
    app = await TestApp.start({
      env: {
        OPENAI_API_KEY: 'sk-openai-fake-test-key',
        OPENAI_BASE_URL: fake.baseURL,
        OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
      },
    });
    ({ key } = await app.createAccount({ balance: 10_000_000, mcpEnabled: true }));
  });
  afterAll(async () => {
    await app?.close();
    await mcp?.close();
    await fake?.close();
  });

  it("a later turn is sent the earlier turns' items once; the conversation keeps the output's order", async () => {
    const conversation = await newConversation(app, key);
    fake.script(
      { text: 'Let me add.', toolCalls: [{ name: 'add', arguments: { a: 20, b: 22 } }] },
      { text: 'It is 42.' },
    );
    const stream = await openCreateStream(app, key, {
      model: 'gpt-4.1-mini',
      conversation,
      input: 'Add 20 and 22.',
      tools: [{ type: 'mcp', server_label: 'calc', server_url: `${mcp.url}/mcp`, require_approval: 'never' }],
    });
    const events = await stream.readAll();
    expect(events.at(-1)!.event).toBe('response.completed');
    const response = events.at(-1)!.data.response;
    // The second turn: the user's input, then the first turn's message and call with its result, each once.
    const second = (fake.requests[1]!.body.input as any[]).map((item) =>
      item.type === 'function_call' || item.type === 'function_call_output'
        ? `${item.type}`
        : `${item.role}:${typeof item.content === 'string' ? item.content : item.content.map((part: any) => part.text).join('')}`,
    );
    expect(second).toEqual(['user:Add 20 and 22.', 'assistant:Let me add.', 'function_call', 'function_call_output']);

    const items = await itemsOf(app, key, conversation);
    expect(items.map((item) => `${item.type}:${item.status ?? ''}`)).toEqual([
      'message:completed',
      'mcp_list_tools:',
      'message:completed',
      'mcp_call:completed',
      'message:completed',
    ]);
    expect(items.slice(1).map((item) => item.id)).toEqual(response.output.map((item: any) => item.id));
  });
});
