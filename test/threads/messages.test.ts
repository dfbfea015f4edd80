import { sql } from 'kysely';
import { insertMessages, listLatestMessagesWithin, messageToWire } from '../../src/threads/threads.repository';
import { useTestApp, postgresUrl } from '../support/harness';

const backend = postgresUrl ? 'postgres' : 'pglite';

describe(`thread messages (${backend})`, () => {
  const suite = useTestApp();

  const call = (method: string, url: string, body?: unknown, as = suite.key) =>
    suite.app.request(method, url, { key: as, body });

  async function newThread(body: unknown = {}, as = suite.key): Promise<string> {
    const reply = await call('POST', '/v2/threads', body, as);
    expect(reply.status).toBe(200);
    return reply.body.id;
  }

  const texts = (data: any[]) => data.map((message) => message.content.map((part: any) => part.text).join(''));
  const all = async (threadId: string) =>
    (await call('GET', `/v2/threads/${threadId}/messages?order=asc&limit=100`)).body.data;
  const messageCount = async (threadId: string) =>
    Number(
      (
        await suite.app.db
          .selectFrom('thread_messages')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('thread_id', '=', threadId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('creates a message from a string or text parts, gets, updates and deletes it', async () => {
    const threadId = await newThread({ messages: [{ role: 'user', content: 'first' }] });
    const created = await call('POST', `/v2/threads/${threadId}/messages`, {
      role: 'assistant',
      content: 'second',
      metadata: { k: 'v' },
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{24}$/),
      object: 'thread.message',
      created_at: expect.any(Number),
      thread_id: threadId,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'text', text: 'second' }],
      metadata: { k: 'v' },
      assistant_id: null,
      run_id: null,
    });
    const parts = await call('POST', `/v2/threads/${threadId}/messages`, {
      role: 'user',
      content: [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
    });
    expect([parts.status, parts.body.content, parts.body.metadata]).toEqual([
      200,
      [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
      {},
    ]);
    expect(texts(await all(threadId))).toEqual(['first', 'second', 'ab']);

    const url = `/v2/threads/${threadId}/messages/${created.body.id}`;
    expect((await call('GET', url)).body).toEqual(created.body);
    const updated = await call('POST', url, { metadata: { other: 'x' } });
    expect([updated.status, updated.body]).toEqual([200, { ...created.body, metadata: { other: 'x' } }]);
    expect((await call('GET', url)).body.metadata).toEqual({ other: 'x' });

    const deleted = await call('DELETE', url);
    expect([deleted.status, deleted.body]).toEqual([
      200,
      { id: created.body.id, object: 'thread.message.deleted', deleted: true },
    ]);
    for (const [method, body] of [['GET'], ['POST', { metadata: {} }], ['DELETE']] as const) {
      const again = await call(method, url, body);
      expect([method, again.status, again.body.error?.code]).toEqual([method, 404, 'message.not_found']);
    }
    expect(texts(await all(threadId))).toEqual(['first', 'ab']);
    const unknownThread = await call('GET', `/v2/threads/thread_nope/messages/${parts.body.id}`);
    expect([unknownThread.status, unknownThread.body.error.code]).toEqual([404, 'thread.not_found']);
  });

  it('rejects bad message bodies with message.invalid_request and writes nothing', async () => {
    const threadId = await newThread({ messages: [{ role: 'user', content: 'keep' }] });
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const bad: unknown[] = [
      undefined,
      {},
      [],
      { role: 'user' },
      { content: 'x' },
      { role: 'system', content: 'x' },
      { role: 'user', content: 5 },
      { role: 'user', content: [] },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x' } }] },
      { role: 'user', content: [{ type: 'text', text: 7 }] },
      { role: 'user', content: 'x', extra: true },
      { role: 'user', content: 'x', metadata: seventeen },
      { role: 'user', content: 'x', metadata: { k: 'v'.repeat(513) } },
      { role: 'user', content: 'a\u0000b' },
    ];
    for (const body of bad) {
      const reply = await call('POST', `/v2/threads/${threadId}/messages`, body);
      expect([JSON.stringify(body), reply.status, reply.body.error?.code]).toEqual([
        JSON.stringify(body),
        400,
        'message.invalid_request',
      ]);
    }
    const messageId = (await all(threadId))[0].id;
    for (const body of [
      undefined,
      {},
      { metadata: seventeen },
      { metadata: {}, role: 'user' },
      { metadata: { k: 1 } },
    ]) {
      const reply = await call('POST', `/v2/threads/${threadId}/messages/${messageId}`, body);
      expect([JSON.stringify(body), reply.status, reply.body.error?.code]).toEqual([
        JSON.stringify(body),
        400,
        'message.invalid_request',
      ]);
    }
    expect(await all(threadId)).toEqual([
      expect.objectContaining({ id: messageId, metadata: {}, content: [{ type: 'text', text: 'keep' }] }),
    ]);
  });

  describe('bulk create', () => {
    it('creates up to 100 messages in order and returns them in the list envelope', async () => {
      const threadId = await newThread({ messages: [{ role: 'user', content: 'before' }] });
      const reply = await call('POST', `/v2/threads/${threadId}/messages/bulk-create`, {
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: [{ type: 'text', text: 'two' }], metadata: { n: '2' } },
          { role: 'user', content: 'three' },
        ],
      });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({
        object: 'list',
        data: [
          expect.objectContaining({
            object: 'thread.message',
            thread_id: threadId,
            role: 'user',
            content: [{ type: 'text', text: 'one' }],
            metadata: {},
          }),
          expect.objectContaining({
            role: 'assistant',
            content: [{ type: 'text', text: 'two' }],
            metadata: { n: '2' },
          }),
          expect.objectContaining({ role: 'user', content: [{ type: 'text', text: 'three' }] }),
        ],
        first_id: reply.body.data[0].id,
        last_id: reply.body.data[2].id,
        has_more: false,
      });
      expect(texts(await all(threadId))).toEqual(['before', 'one', 'two', 'three']);
      const hundred = await call('POST', `/v2/threads/${threadId}/messages/bulk-create`, {
        messages: Array.from({ length: 100 }, (_, i) => ({ role: 'user', content: `b${i}` })),
      });
      expect([hundred.status, hundred.body.data.length]).toEqual([200, 100]);
      expect(await messageCount(threadId)).toBe(104);
    });

    it('is all or nothing: one invalid message, or too many or none, is a 400 and nothing is written', async () => {
      const threadId = await newThread();
      const ok = { role: 'user', content: 'ok' };
      for (const body of [
        { messages: [ok, ok, { role: 'user', content: [{ type: 'image_url' }] }] },
        { messages: [ok, { role: 'tool', content: 'x' }] },
        { messages: [ok, { role: 'user', content: [] }] },
        { messages: Array.from({ length: 101 }, () => ok) },
        { messages: [] },
        {},
        { messages: [ok], extra: 1 },
        { message: [ok] },
      ]) {
        const reply = await call('POST', `/v2/threads/${threadId}/messages/bulk-create`, body);
        expect([JSON.stringify(body).slice(0, 80), reply.status, reply.body.error?.code]).toEqual([
          JSON.stringify(body).slice(0, 80),
          400,
          'message.invalid_request',
        ]);
      }
      expect(await messageCount(threadId)).toBe(0);
      const missing = await call('POST', '/v2/threads/thread_nope/messages/bulk-create', { messages: [ok] });
      expect([missing.status, missing.body.error.code]).toEqual([404, 'thread.not_found']);
    });
  });

  describe('bulk delete', () => {
    it('deletes the listed messages and returns the deleted objects in the order given', async () => {
      const threadId = await newThread({
        messages: ['a', 'b', 'c', 'd'].map((content) => ({ role: 'user', content })),
      });
      const ids = (await all(threadId)).map((message: any) => message.id);
      const reply = await call('DELETE', `/v2/threads/${threadId}/messages/bulk-delete`, {
        message_ids: [ids[2], ids[0]],
      });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({
        object: 'list',
        data: [
          { id: ids[2], object: 'thread.message.deleted', deleted: true },
          { id: ids[0], object: 'thread.message.deleted', deleted: true },
        ],
      });
      expect(texts(await all(threadId))).toEqual(['b', 'd']);
    });

    it('deletes nothing when one id is unknown or of another thread (404), and rejects bad bodies (400)', async () => {
      const threadId = await newThread({ messages: ['a', 'b'].map((content) => ({ role: 'user', content })) });
      const otherThread = await newThread({ messages: [{ role: 'user', content: 'elsewhere' }] });
      const ids = (await all(threadId)).map((message: any) => message.id);
      const foreign = (await all(otherThread))[0].id;
      const unknown = await call('DELETE', `/v2/threads/${threadId}/messages/bulk-delete`, {
        message_ids: [ids[0], 'msg_unknown'],
      });
      expect([unknown.status, unknown.body.error.code]).toEqual([404, 'message.not_found']);
      expect(unknown.body.error.message).toContain('msg_unknown');
      const crossed = await call('DELETE', `/v2/threads/${threadId}/messages/bulk-delete`, {
        message_ids: [ids[1], foreign],
      });
      expect([crossed.status, crossed.body.error.code]).toEqual([404, 'message.not_found']);
      expect(texts(await all(threadId))).toEqual(['a', 'b']);
      expect(texts(await all(otherThread))).toEqual(['elsewhere']);

      for (const body of [
        undefined,
        {},
        { message_ids: [] },
        { message_ids: [ids[0], ids[0]] },
        { message_ids: Array.from({ length: 101 }, (_, i) => `msg_${i}`) },
        { message_ids: [5] },
        { message_ids: [''] },
        { message_ids: [ids[0]], extra: 1 },
        { message_ids: ids[0] },
      ]) {
        const reply = await call('DELETE', `/v2/threads/${threadId}/messages/bulk-delete`, body);
        expect([JSON.stringify(body)?.slice(0, 80), reply.status, reply.body.error?.code]).toEqual([
          JSON.stringify(body)?.slice(0, 80),
          400,
          'message.invalid_request',
        ]);
      }
      expect(texts(await all(threadId))).toEqual(['a', 'b']);
      const missingThread = await call('DELETE', '/v2/threads/thread_nope/messages/bulk-delete', {
        message_ids: [ids[0]],
      });
      expect([missingThread.status, missingThread.body.error.code]).toEqual([404, 'thread.not_found']);
    });
  });

  describe('paging', () => {
    let threadId: string;
    let expected: string[];
    beforeAll(async () => {
      threadId = await newThread({
        messages: Array.from({ length: 100 }, (_, i) => ({ role: 'user', content: `m${i}` })),
      });
      const more = await call('POST', `/v2/threads/${threadId}/messages/bulk-create`, {
        messages: Array.from({ length: 30 }, (_, i) => ({ role: 'user', content: `m${100 + i}` })),
      });
      expect(more.status).toBe(200);
      const ascending = await call('GET', `/v2/threads/${threadId}/messages?order=asc&limit=100`);
      const rest = await call(
        'GET',
        `/v2/threads/${threadId}/messages?order=asc&limit=100&after=${ascending.body.last_id}`,
      );
      expected = [...ascending.body.data, ...rest.body.data].map((message: any) => message.id);
      expect(texts([...ascending.body.data, ...rest.body.data])).toEqual(
        Array.from({ length: 130 }, (_, i) => `m${i}`),
      );
      expect([ascending.body.has_more, rest.body.has_more]).toEqual([true, false]);
    });

    async function walk(order: 'asc' | 'desc', direction: 'after' | 'before', limit: number, start?: string) {
      const seen: string[] = start ? [start] : [];
      let cursor = start;
      for (let page = 0; page < 1000; page++) {
        const reply: any = await call(
          'GET',
          `/v2/threads/${threadId}/messages?limit=${limit}&order=${order}${cursor ? `&${direction}=${cursor}` : ''}`,
        );
        expect(reply.status).toBe(200);
        const ids = reply.body.data.map((message: any) => message.id);
        expect([reply.body.object, reply.body.first_id, reply.body.last_id]).toEqual([
          'list',
          ids[0] ?? null,
          ids.at(-1) ?? null,
        ]);
        if (reply.body.has_more) expect(ids).toHaveLength(limit);
        if (direction === 'after') seen.push(...ids);
        else seen.unshift(...ids);
        if (!reply.body.has_more) return seen;
        cursor = direction === 'after' ? reply.body.last_id : reply.body.first_id;
      }
      throw new Error('walk did not end');
    }

    it('walks forwards and backwards in both orders without gaps or duplicates', async () => {
      expect(await walk('asc', 'after', 7)).toEqual(expected);
      expect(await walk('desc', 'after', 7)).toEqual([...expected].reverse());
      expect(await walk('asc', 'before', 7, expected[129])).toEqual(expected);
      expect(await walk('desc', 'before', 7, expected[0])).toEqual([...expected].reverse());
    });

    it('defaults to 20 newest first; before returns the rows nearest the cursor, in the requested order', async () => {
      const url = `/v2/threads/${threadId}/messages`;
      const first = await call('GET', url);
      expect([first.body.data.map((m: any) => m.id), first.body.has_more]).toEqual([
        [...expected].reverse().slice(0, 20),
        true,
      ]);
      const ids = async (query: string) => (await call('GET', `${url}?${query}`)).body.data.map((m: any) => m.id);
      const middle = expected[60];
      expect(await ids(`limit=3&order=asc&after=${middle}`)).toEqual(expected.slice(61, 64));
      expect(await ids(`limit=3&order=asc&before=${middle}`)).toEqual(expected.slice(57, 60));
      expect(await ids(`limit=3&order=desc&after=${middle}`)).toEqual(expected.slice(57, 60).reverse());
      expect(await ids(`limit=3&order=desc&before=${middle}`)).toEqual(expected.slice(61, 64).reverse());
      expect(await ids('limit=1&order=asc')).toEqual([expected[0]]);
      const last = await call('GET', `${url}?limit=1&order=asc&after=${expected[128]}`);
      expect([last.body.data.map((m: any) => m.id), last.body.has_more]).toEqual([[expected[129]], false]);
      const pastEnd = await call('GET', `${url}?order=asc&after=${expected[129]}`);
      expect(pastEnd.body).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    });

    it('rejects bad queries and cursors not of this thread with message.invalid_request', async () => {
      const otherThread = await newThread({ messages: [{ role: 'user', content: 'x' }] });
      const foreign = (await all(otherThread))[0].id;
      const queries = [
        'limit=0',
        'limit=101',
        'limit=abc',
        'limit=1.5',
        'limit=',
        'order=up',
        'order=ASC',
        'limit=5&limit=6',
        'ordr=asc',
        `after=${expected[1]}&before=${expected[5]}`,
        'after=msg_unknown',
        'before=msg_unknown',
        `after=${foreign}`,
        `before=${foreign}`,
        `after=${threadId}`,
      ];
      for (const query of queries) {
        const reply = await call('GET', `/v2/threads/${threadId}/messages?${query}`);
        expect([query, reply.status, reply.body.error?.code]).toEqual([query, 400, 'message.invalid_request']);
      }
      expect((await call('GET', `/v2/threads/${threadId}/messages?limit=100&order=asc`)).status).toBe(200);
    });
  });

  it('keeps each append contiguous when many run at once on one thread', async () => {
    const threadId = await newThread();
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, request) =>
        call('POST', `/v2/threads/${threadId}/messages/bulk-create`, {
          messages: Array.from({ length: 5 }, (_, i) => ({ role: 'user', content: `r${request}-${i}` })),
        }),
      ),
    );
    expect(replies.map((reply) => reply.status)).toEqual(Array(8).fill(200));
    const listed = texts(await all(threadId));
    expect(listed).toHaveLength(40);
    for (let start = 0; start < 40; start += 5) {
      const request = listed[start].split('-')[0];
      expect(listed.slice(start, start + 5)).toEqual([0, 1, 2, 3, 4].map((i) => `${request}-${i}`));
    }
  });

  describe('repository for the Runs engine', () => {
    it('insertMessages marks messages of a Run and skips an explicit id already stored', async () => {
      const threadId = await newThread({ messages: [{ role: 'user', content: 'question' }] });
      const appended = await suite.app.db.transaction().execute((trx) =>
        insertMessages(trx, {
          threadId,
          accountId: suite.accountId,
          messages: [
            {
              role: 'assistant',
              content: [{ type: 'text', text: 'answer' }],
              id: 'msg_fixed_for_retry',
              runId: 'run_test1',
              assistantId: 7,
            },
          ],
        }),
      );
      expect(messageToWire(appended[0])).toEqual({
        id: 'msg_fixed_for_retry',
        object: 'thread.message',
        created_at: expect.any(Number),
        thread_id: threadId,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'text', text: 'answer' }],
        metadata: {},
        assistant_id: 7,
        run_id: 'run_test1',
      });
      expect((await call('GET', `/v2/threads/${threadId}/messages/msg_fixed_for_retry`)).body).toMatchObject({
        assistant_id: 7,
        run_id: 'run_test1',
      });

      // A retried append with the same id adds nothing and returns the stored row.
      const again = await insertMessages(suite.app.db, {
        threadId,
        accountId: suite.accountId,
        messages: [
          {
            role: 'assistant',
            content: [{ type: 'text', text: 'a different retry' }],
            id: 'msg_fixed_for_retry',
            runId: 'run_test1',
            assistantId: 7,
          },
        ],
      });
      expect(again.map((row) => [row.seq, row.content])).toEqual([
        [appended[0].seq, [{ type: 'text', text: 'answer' }]],
      ]);
      expect(texts(await all(threadId))).toEqual(['question', 'answer']);

      const stranger = await suite.app.createAccount();
      await expect(
        insertMessages(suite.app.db, {
          threadId,
          accountId: stranger.accountId,
          messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
        }),
      ).rejects.toMatchObject({ status: 404, code: 'thread.not_found' });
    });

    it('listLatestMessagesWithin reads sizes newest first across growing pages and loads only the messages that fit', async () => {
      // w10 … w44: 3 characters, 1 + 4 = 5 tokens each.
      const threadId = await newThread({
        messages: Array.from({ length: 20 }, (_, i) => ({ role: 'user', content: `w${10 + i}` })),
      });
      await call('POST', `/v2/threads/${threadId}/messages/bulk-create`, {
        messages: Array.from({ length: 15 }, (_, i) => ({
          role: 'assistant',
          content: [
            { type: 'text', text: 'w' },
            { type: 'text', text: `${30 + i}` },
          ],
        })),
      });
      const rowTexts = (rows: Array<{ content: Array<{ text: string }> }>) =>
        rows.map((row) => row.content.map((part) => part.text).join(''));

      const whole = await listLatestMessagesWithin(suite.app.db, threadId, { tokenBudget: 1_000 });
      expect([
        whole.rows.length,
        whole.complete,
        whole.tokensSeen,
        rowTexts(whole.rows)[0],
        rowTexts(whole.rows)[34],
      ]).toEqual([35, true, 175, 'w10', 'w44']);
      const fitting = await listLatestMessagesWithin(suite.app.db, threadId, { tokenBudget: 150 }); // 30 messages, past the first two size pages
      expect([
        fitting.rows.length,
        fitting.complete,
        fitting.tokensSeen,
        rowTexts(fitting.rows)[0],
        rowTexts(fitting.rows)[29],
      ]).toEqual([30, false, 155, 'w15', 'w44']);
      const limited = await listLatestMessagesWithin(suite.app.db, threadId, { limit: 33, tokenBudget: 1_000 });
      expect([limited.rows.length, limited.complete, rowTexts(limited.rows)[0]]).toEqual([33, true, 'w12']);
      expect(await listLatestMessagesWithin(suite.app.db, threadId, { limit: 0, tokenBudget: 1_000 })).toEqual({
        rows: [],
        complete: true,
        tokensSeen: 0,
      });
      expect(await listLatestMessagesWithin(suite.app.db, threadId, { tokenBudget: 4 })).toEqual({
        rows: [],
        complete: false,
        tokensSeen: 5,
      });
      expect(await listLatestMessagesWithin(suite.app.db, await newThread(), { tokenBudget: 10 })).toEqual({
        rows: [],
        complete: true,
        tokensSeen: 0,
      });

      // ceil(characters / 4) + 4, characters counted over every part, as prompt.ts estimates.
      const sized = await newThread({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'x'.repeat(9) },
              { type: 'text', text: 'y'.repeat(8) },
            ],
          },
        ],
      });
      expect((await listLatestMessagesWithin(suite.app.db, sized, { tokenBudget: 100 })).tokensSeen).toBe(
        Math.ceil(17 / 4) + 4,
      );
    });
  });

  it('pages deep inside a 20,000-message thread and reads only its latest messages for a prompt', async () => {
    const threadId = await newThread();
    await sql`
      insert into thread_messages (id, thread_id, account_id, role, content)
      select 'msg_perf' || lpad(g::text, 6, '0'), ${threadId}, ${suite.accountId}, 'user',
             jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'message ' || g))
      from generate_series(1, 20000) as g
    `.execute(suite.app.db);
    const page = await call('GET', `/v2/threads/${threadId}/messages?order=asc&limit=5&after=msg_perf015000`);
    expect(page.body.data.map((message: any) => message.id)).toEqual(
      Array.from({ length: 5 }, (_, i) => `msg_perf0${15001 + i}`),
    );
    const latest = await listLatestMessagesWithin(suite.app.db, threadId, { tokenBudget: 100 });
    expect(latest.rows.at(-1)?.id).toBe('msg_perf020000');
  }, 120_000);
});
