import { appendItems, listLatestItemsWithin } from '../../src/conversations/conversations.repository';
import { useEngineUnderTest } from '../engine/engine-under-test';
import { pollUntil } from './helpers';

/**
 * A prompt reads history only as far as the context window (dev-echo: 16,384 tokens, about 65,000 characters):
 * a conversation may hold far more than that, and far more than memory.
 */
describe('responses: history read within the context window', () => {
  const under = useEngineUnderTest();
  const app = () => under.app;

  const newConversation = async (items: unknown[]) => {
    const reply = await app().request('POST', '/v2/conversations', { key: under.key, body: { items } });
    expect(reply.status).toBe(200);
    return reply.body.id as string;
  };
  const big = (label: string) => ({ type: 'message', role: 'user', content: `${label} ${'x'.repeat(40_000)}` });

  it('reads item sizes newest first across growing pages and loads only the items that fit', async () => {
    const items = (from: number, count: number) =>
      Array.from({ length: count }, (_, index) => ({ type: 'message', role: 'user', content: `w${from + index}` }));
    const id = await newConversation(items(10, 20)); // w10 … w29: 3 characters, 5 tokens each
    const added = await app().request('POST', `/v2/conversations/${id}/items`, {
      key: under.key,
      body: { items: items(30, 15) },
    });
    expect(added.status).toBe(200);
    const texts = (rows: Array<{ content: unknown }>) =>
      rows.map((row) => (row.content as Array<{ text: string }>)[0].text);

    const all = await listLatestItemsWithin(app().db, id, { tokenBudget: 1_000 });
    expect([all.rows.length, all.complete, all.tokensSeen, texts(all.rows)[0], texts(all.rows)[34]]).toEqual([
      35,
      true,
      175,
      'w10',
      'w44',
    ]);
    const fitting = await listLatestItemsWithin(app().db, id, { tokenBudget: 150 }); // 30 items, past the first two pages
    expect([fitting.rows.length, fitting.complete, fitting.tokensSeen, texts(fitting.rows)[0]]).toEqual([
      30,
      false,
      155,
      'w15',
    ]);
    const limited = await listLatestItemsWithin(app().db, id, { limit: 33, tokenBudget: 1_000 });
    expect([limited.rows.length, limited.complete, texts(limited.rows)[0]]).toEqual([33, true, 'w12']);
  });

  it('truncation auto keeps the newest items that fit; disabled is a 400 naming the estimate', async () => {
    await under.start((real) => real);
    const id = await newConversation([
      big('oldest'),
      big('older'),
      { type: 'message', role: 'user', content: 'recent' },
    ]);
    const auto = await app().request('POST', '/v2/responses', {
      key: under.key,
      body: { model: 'dev-echo', input: 'now', conversation: id, truncation: 'auto', background: false },
    });
    expect(auto.status).toBe(200);
    // older (10,000 + 2 + 4 tokens) + recent + now fit; oldest does not.
    expect(auto.body.usage.input_tokens).toBe(4); // dev-echo counts words: "older x…", "recent", "now"
    const disabled = await app().request('POST', '/v2/responses', {
      key: under.key,
      body: { model: 'dev-echo', input: 'now', conversation: id, background: false },
    });
    expect(disabled.status).toBe(400);
    expect(disabled.body.error).toEqual({
      code: 'response.context_length_exceeded',
      message: expect.stringMatching(
        /^The input \(\d+ tokens or more with history, by estimate\) does not fit the context window of dev-echo \(16384\)/,
      ),
    });
  });

  it('fails a Response cleanly when its history outgrew the window before it ran (truncation disabled)', async () => {
    const id = await newConversation([{ type: 'message', role: 'user', content: 'small' }]);
    const accountId = (
      await app().db.selectFrom('conversations').select('account_id').where('id', '=', id).executeTakeFirstOrThrow()
    ).account_id;
    // Another Response's message is being generated: in progress, it is no Response's context (api-decisions 30).
    const other = {
      type: 'message' as const,
      role: 'assistant' as const,
      id: 'msg_other_answer',
      status: 'in_progress' as const,
    };
    await app()
      .db.transaction()
      .execute((trx) =>
        appendItems(trx, {
          conversationId: id,
          accountId,
          responseId: 'resp_other',
          items: [{ ...other, content: [] }],
        }),
      );
    // No engine runs yet: the Response is accepted (it fits); then the other answer completes, past the window.
    const created = await app().request('POST', '/v2/responses', {
      key: under.key,
      body: { model: 'dev-echo', input: 'now', conversation: id },
    });
    expect([created.status, created.body.status]).toEqual([200, 'queued']);
    const long = `${'x'.repeat(40_000)} ${'y'.repeat(40_000)}`;
    await app()
      .db.transaction()
      .execute((trx) =>
        appendItems(trx, {
          conversationId: id,
          accountId,
          responseId: 'resp_other',
          items: [{ ...other, status: 'completed', content: [{ type: 'output_text', text: long }] }],
          update: true,
        }),
      );
    await under.start((real) => real);
    const final = await pollUntil(
      () => app().request('GET', `/v2/responses/${created.body.id}`, { key: under.key }),
      (reply) => reply.body.status !== 'queued' && reply.body.status !== 'in_progress',
    );
    expect(final.body).toMatchObject({
      status: 'failed',
      error: { code: 'response.context_length_exceeded' },
      usage: { cost: 0 },
    });
  });
});
