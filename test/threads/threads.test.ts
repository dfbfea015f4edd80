import { createThreadsService } from '../../src/threads/threads.service';
import { useTestApp, postgresUrl } from '../support/harness';

const backend = postgresUrl ? 'postgres' : 'pglite';

describe(`threads (${backend})`, () => {
  const suite = useTestApp();

  const call = (method: string, url: string, body?: unknown, as = suite.key) =>
    suite.app.request(method, url, { key: as, body });

  async function countRows(accountId: string) {
    const threads = await suite.app.db
      .selectFrom('threads')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    const messages = await suite.app.db
      .selectFrom('thread_messages')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    return { threads: Number(threads.n), messages: Number(messages.n) };
  }

  async function newThread(body: unknown = {}, as = suite.key): Promise<string> {
    const reply = await call('POST', '/v2/threads', body, as);
    expect(reply.status).toBe(200);
    return reply.body.id;
  }

  const messagesOf = async (threadId: string, as = suite.key) =>
    (await call('GET', `/v2/threads/${threadId}/messages?order=asc&limit=100`, undefined, as)).body.data;

  it('creates a thread with metadata and initial messages given as strings and as text parts, in order', async () => {
    const created = await call('POST', '/v2/threads', {
      metadata: { topic: 'billing' },
      messages: [
        { role: 'user', content: 'What is my balance?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'It is ' },
            { type: 'text', text: '42.' },
          ],
          metadata: { source: 'import' },
        },
        { role: 'user', content: '' },
      ],
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^thread_[0-9a-f]{24}$/),
      object: 'thread',
      created_at: expect.any(Number),
      metadata: { topic: 'billing' },
      tool_resources: null,
    });
    expect(Math.abs(created.body.created_at - Date.now() / 1000)).toBeLessThan(60);

    const base = {
      object: 'thread.message',
      created_at: expect.any(Number),
      thread_id: created.body.id,
      status: 'completed',
      assistant_id: null,
      run_id: null,
    };
    expect(await messagesOf(created.body.id)).toEqual([
      {
        ...base,
        id: expect.stringMatching(/^msg_[0-9a-f]{24}$/),
        role: 'user',
        content: [{ type: 'text', text: 'What is my balance?' }],
        metadata: {},
      },
      {
        ...base,
        id: expect.stringMatching(/^msg_/),
        role: 'assistant',
        content: [
          { type: 'text', text: 'It is ' },
          { type: 'text', text: '42.' },
        ],
        metadata: { source: 'import' },
      },
      {
        ...base,
        id: expect.stringMatching(/^msg_/),
        role: 'user',
        content: [{ type: 'text', text: '' }],
        metadata: {},
      },
    ]);
  });

  it('creates an empty thread from an empty or missing body, and takes 100 initial messages', async () => {
    for (const body of [{}, undefined]) {
      const reply = await suite.app.request('POST', '/v2/threads', { key: suite.key, body });
      expect([reply.status, reply.body.metadata, reply.body.tool_resources]).toEqual([200, {}, null]);
      expect((await call('GET', `/v2/threads/${reply.body.id}/messages`)).body).toEqual({
        object: 'list',
        data: [],
        first_id: null,
        last_id: null,
        has_more: false,
      });
    }
    const hundred = await newThread({
      messages: Array.from({ length: 100 }, (_, i) => ({ role: 'user', content: `m${i}` })),
    });
    const listed = await messagesOf(hundred);
    expect(listed.map((message: any) => message.content[0].text)).toEqual(
      Array.from({ length: 100 }, (_, i) => `m${i}`),
    );
  });

  it('gets, updates (replacing metadata) and deletes a thread; its messages go with it', async () => {
    const id = await newThread({
      metadata: { a: '1', b: '2' },
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
      ],
    });
    const got = await call('GET', `/v2/threads/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id,
      object: 'thread',
      created_at: expect.any(Number),
      metadata: { a: '1', b: '2' },
      tool_resources: null,
    });

    const updated = await call('POST', `/v2/threads/${id}`, { metadata: { c: '3' } });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({ ...got.body, metadata: { c: '3' } });
    expect((await call('GET', `/v2/threads/${id}`)).body.metadata).toEqual({ c: '3' });
    expect((await call('POST', `/v2/threads/${id}`, { metadata: {} })).body.metadata).toEqual({});

    const messageId = (await messagesOf(id))[0].id;
    const deleted = await call('DELETE', `/v2/threads/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, object: 'thread.deleted', deleted: true });
    expect(await suite.app.db.selectFrom('thread_messages').select('id').where('thread_id', '=', id).execute()).toEqual(
      [],
    );
    for (const [method, url, body] of [
      ['GET', `/v2/threads/${id}`],
      ['POST', `/v2/threads/${id}`, { metadata: {} }],
      ['DELETE', `/v2/threads/${id}`],
      ['GET', `/v2/threads/${id}/messages`],
      ['POST', `/v2/threads/${id}/messages`, { role: 'user', content: 'x' }],
      ['GET', `/v2/threads/${id}/messages/${messageId}`],
    ] as const) {
      const reply = await call(method, url, body);
      expect([method, url, reply.status, reply.body.error?.code]).toEqual([method, url, 404, 'thread.not_found']);
    }
  });

  it('calls beforeDeleteThread with the account and thread before the delete, and only for an own thread', async () => {
    const calls: Array<[string, string, boolean]> = [];
    const service = createThreadsService({
      db: suite.app.db,
      beforeDeleteThread: async (accountId, threadId) => {
        const stillThere = await suite.app.db
          .selectFrom('threads')
          .select('id')
          .where('id', '=', threadId)
          .executeTakeFirst();
        calls.push([accountId, threadId, stillThere !== undefined]);
      },
    });
    const id = await newThread();
    const stranger = await suite.app.createAccount();
    await expect(service.remove(stranger.accountId, id)).rejects.toMatchObject({
      status: 404,
      code: 'thread.not_found',
    });
    expect(calls).toEqual([]);
    await service.remove(suite.accountId, id);
    expect(calls).toEqual([[suite.accountId, id, true]]);
    expect((await call('GET', `/v2/threads/${id}`)).status).toBe(404);
  });

  describe('400 rules', () => {
    const message = { role: 'user', content: 'ok' };
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));

    it('rejects bad create bodies and writes nothing', async () => {
      const { key: own, accountId: ownAccount } = await suite.app.createAccount();
      const bad: unknown[] = [
        [],
        'text',
        { extra: true },
        { tool_resources: {} },
        { metadata: seventeen },
        { metadata: { ['k'.repeat(65)]: 'v' } },
        { metadata: { k: 'v'.repeat(513) } },
        { metadata: { k: 5 } },
        { metadata: { '': 'v' } },
        { metadata: { k: 'a\u0000b' } },
        { metadata: 'x' },
        { messages: 'x' },
        { messages: Array.from({ length: 101 }, () => message) },
        { messages: [message, { role: 'system', content: 'x' }] },
        { messages: [message, { role: 'robot', content: 'x' }] },
        { messages: [{ role: 'user' }] },
        { messages: [{ content: 'x' }] },
        { messages: [{ role: 'user', content: 5 }] },
        { messages: [{ role: 'user', content: null }] },
        { messages: [{ role: 'user', content: [] }] },
        { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x' } }] }] },
        {
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'a' },
                { type: 'image_file', file_id: 'f' },
              ],
            },
          ],
        },
        { messages: [{ role: 'user', content: [{ type: 'text' }] }] },
        { messages: [{ role: 'user', content: [{ type: 'text', text: 'a', extra: 1 }] }] },
        { messages: [{ role: 'user', content: [{ type: 'input_text', text: 'a' }] }] },
        { messages: [{ role: 'user', content: 'x', extra: 1 }] },
        { messages: [{ role: 'user', content: 'x', metadata: seventeen }] },
        { messages: [{ role: 'user', content: 'x', metadata: { k: 1 } }] },
        { messages: [{ role: 'user', content: 'a\u0000b' }] },
      ];
      for (const body of bad) {
        const reply = await suite.app.request('POST', '/v2/threads', { key: own, body });
        const label = JSON.stringify(body).slice(0, 100);
        expect([label, reply.status, reply.body.error?.code]).toEqual([label, 400, 'thread.invalid_request']);
        expect(reply.body.error.message).toEqual(expect.any(String));
      }
      expect(await countRows(ownAccount)).toEqual({ threads: 0, messages: 0 });
    });

    it('names the offending field in the message', async () => {
      const role = await call('POST', '/v2/threads', { messages: [message, message, { role: 'robot', content: 'x' }] });
      expect(role.body.error.message).toMatch(/messages\[2\]\.role: role must be 'user' or 'assistant'/);
      const part = await call('POST', '/v2/threads', {
        messages: [{ role: 'user', content: [{ type: 'image_url' }] }],
      });
      expect(part.body.error.message).toMatch(/messages\[0\]\.content/);
      const many = await call('POST', '/v2/threads', { messages: Array.from({ length: 101 }, () => message) });
      expect(many.body.error.message).toMatch(/at most 100/);
    });

    it('rejects bad update bodies and keeps the metadata', async () => {
      const id = await newThread({ metadata: { keep: 'me' } });
      for (const body of [
        undefined,
        {},
        { metadata: seventeen },
        { metadata: {}, extra: 1 },
        { metadata: null },
        { metadata: { k: 1 } },
        [],
      ]) {
        const reply = await call('POST', `/v2/threads/${id}`, body);
        expect([JSON.stringify(body), reply.status, reply.body.error?.code]).toEqual([
          JSON.stringify(body),
          400,
          'thread.invalid_request',
        ]);
      }
      expect((await call('GET', `/v2/threads/${id}`)).body.metadata).toEqual({ keep: 'me' });
    });
  });

  it('never leaves half a thread behind when an insert fails mid-way', async () => {
    const { accountId: ownAccount } = await suite.app.createAccount();
    const service = createThreadsService({ db: suite.app.db });
    // Validation is bypassed on purpose: the third message fails inside the database (Postgres refuses U+0000 in
    // jsonb), after the thread row and two messages were already inserted in the transaction.
    await expect(
      service.create(ownAccount, {
        metadata: { a: 'b' },
        messages: ['one', 'two', 'th\u0000ree'].map((text) => ({
          role: 'user' as const,
          content: [{ type: 'text' as const, text }],
        })),
      }),
    ).rejects.toThrow();
    expect(await countRows(ownAccount)).toEqual({ threads: 0, messages: 0 });
  });

  it("hides another account's threads and messages (404 on every route) and changes nothing of them", async () => {
    const owner = await suite.app.createAccount();
    const stranger = await suite.app.createAccount();
    const id = await newThread(
      { metadata: { owner: 'yes' }, messages: [{ role: 'user', content: 'secret' }] },
      owner.key,
    );
    const messageId = (await messagesOf(id, owner.key))[0].id;
    const strangerThread = await newThread({}, stranger.key);

    for (const [method, url, body] of [
      ['GET', `/v2/threads/${id}`],
      ['POST', `/v2/threads/${id}`, { metadata: { x: 'y' } }],
      ['DELETE', `/v2/threads/${id}`],
      ['POST', `/v2/threads/${id}/messages`, { role: 'user', content: 'intrusion' }],
      ['GET', `/v2/threads/${id}/messages`],
      ['GET', `/v2/threads/${id}/messages?after=${messageId}`],
      ['GET', `/v2/threads/${id}/messages/${messageId}`],
      ['POST', `/v2/threads/${id}/messages/${messageId}`, { metadata: { x: 'y' } }],
      ['DELETE', `/v2/threads/${id}/messages/${messageId}`],
      ['POST', `/v2/threads/${id}/messages/bulk-create`, { messages: [{ role: 'user', content: 'intrusion' }] }],
      ['DELETE', `/v2/threads/${id}/messages/bulk-delete`, { message_ids: [messageId] }],
    ] as const) {
      const reply = await call(method, url, body, stranger.key);
      expect([method, url, reply.status, reply.body.error?.code]).toEqual([method, url, 404, 'thread.not_found']);
      expect(JSON.stringify(reply.body)).not.toContain('secret');
    }
    // The owner's message is not reachable through the stranger's own thread either.
    for (const [method, body] of [['GET'], ['POST', { metadata: { x: 'y' } }], ['DELETE']] as const) {
      const reply = await call(method, `/v2/threads/${strangerThread}/messages/${messageId}`, body, stranger.key);
      expect([method, reply.status, reply.body.error?.code]).toEqual([method, 404, 'message.not_found']);
    }
    const bulk = await call(
      'DELETE',
      `/v2/threads/${strangerThread}/messages/bulk-delete`,
      { message_ids: [messageId] },
      stranger.key,
    );
    expect([bulk.status, bulk.body.error?.code]).toEqual([404, 'message.not_found']);
    const cursor = await call(
      'GET',
      `/v2/threads/${strangerThread}/messages?after=${messageId}`,
      undefined,
      stranger.key,
    );
    expect([cursor.status, cursor.body.error?.code]).toEqual([400, 'message.invalid_request']);

    expect(await call('GET', `/v2/threads/${id}`, undefined, owner.key)).toMatchObject({
      status: 200,
      body: { metadata: { owner: 'yes' } },
    });
    const after = await messagesOf(id, owner.key);
    expect(after.map((message: any) => [message.id, message.content[0].text, message.metadata])).toEqual([
      [messageId, 'secret', {}],
    ]);
  });

  it('leaves /v2/threads/runs to the Runs routes rather than reading "runs" as a thread id', async () => {
    const reply = await call('POST', '/v2/threads/runs', { metadata: {} });
    expect(reply.body.error?.code ?? '').not.toMatch(/^thread\./);
  });
});
