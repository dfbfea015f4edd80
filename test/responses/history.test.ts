import { useTestApp } from '../support/harness';
import { createResponse, outputText } from './helpers';

/**
 * Spec: Responses (conversation, previous_response_id, message_limit, truncation), Conversation item;
 * DECISIONS 19, 21, and dev-echo's token counting (input tokens = every word sent to the model).
 */
describe('responses: history from conversations and previous responses', () => {
  const suite = useTestApp();

  const newConversation = async (items?: unknown[]) => {
    const reply = await suite.app.request('POST', '/v2/conversations', {
      key: suite.key,
      body: items ? { items } : {},
    });
    expect(reply.status).toBe(200);
    return reply.body.id as string;
  };
  const itemsOf = async (conversationId: string) => {
    const reply = await suite.app.request('GET', `/v2/conversations/${conversationId}/items?order=asc&limit=100`, {
      key: suite.key,
    });
    expect(reply.status).toBe(200);
    return reply.body.data as any[];
  };
  const run = async (body: Record<string, unknown>) => {
    const reply = await createResponse(suite.app, suite.key, { background: false, ...body });
    expect([reply.status, reply.body.status, reply.body.error]).toEqual([200, 'completed', null]);
    return reply.body;
  };

  it('appends input and output to the conversation, marked with the response_id', async () => {
    const conversation = await newConversation();
    const response = await run({ conversation, input: 'alpha beta gamma' });
    expect(response.conversation).toEqual({ id: conversation });

    const items = await itemsOf(conversation);
    expect(items).toEqual([
      expect.objectContaining({
        object: 'conversation.item',
        type: 'message',
        role: 'user',
        status: 'completed',
        content: [{ type: 'input_text', text: 'alpha beta gamma' }],
        response_id: response.id,
      }),
      expect.objectContaining({
        object: 'conversation.item',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'alpha beta gamma', annotations: [], logprobs: [] }],
        response_id: response.id,
      }),
    ]);
    // The output item in the conversation is the Response's own output item.
    expect(items[1].id).toBe(response.output[0].id);
  });

  it('sends the conversation history to the model; message_limit keeps only the latest items', async () => {
    const conversation = await newConversation();
    const first = await run({ conversation, input: 'alpha beta gamma' });
    expect(first.usage).toMatchObject({ input_tokens: 3, output_tokens: 3 });

    // History (3 + 3 words) plus the new input (2).
    const second = await run({ conversation: { id: conversation }, input: 'delta epsilon' });
    expect(second.usage).toMatchObject({ input_tokens: 8, output_tokens: 2 });
    expect(outputText(second)).toBe('delta epsilon');

    // The latest item only (the assistant's 'delta epsilon') plus 'zeta'.
    const limited = await run({ conversation, input: 'zeta', message_limit: 1 });
    expect(limited.usage.input_tokens).toBe(3);
    const none = await run({ conversation, input: 'eta theta', message_limit: 0 });
    expect(none.usage.input_tokens).toBe(2);
    // Instructions are sent too; history was not deleted by message_limit (3+3+2+2+1+1+2+2 words).
    const all = await run({ conversation, input: 'iota', instructions: 'answer very briefly' });
    expect(all.usage.input_tokens).toBe(3 + 16 + 1);

    const items = await itemsOf(conversation);
    expect(items).toHaveLength(10);
    expect(items.map((item) => item.response_id)).toEqual(
      [first, second, limited, none, all].flatMap((response) => [response.id, response.id]),
    );
  });

  it('previous_response_id chains the earlier inputs and outputs', async () => {
    const first = await run({ input: 'one two three' });
    expect(first.usage.input_tokens).toBe(3);
    const second = await run({ previous_response_id: first.id, input: 'four five' });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.usage.input_tokens).toBe(3 + 3 + 2);
    const third = await run({ previous_response_id: second.id, input: 'six' });
    expect(third.usage.input_tokens).toBe(3 + 3 + 2 + 2 + 1);
    expect(third.conversation).toBeUndefined();
    // message_limit applies to the chain as well: the latest history item is second's output.
    const limited = await run({ previous_response_id: second.id, input: 'six', message_limit: 1 });
    expect(limited.usage.input_tokens).toBe(2 + 1);
  });

  it('deleting a conversation item does not change a finished Response, only later history', async () => {
    const conversation = await newConversation();
    const response = await run({ conversation, input: 'remember this sentence' });
    const before = await suite.app.request('GET', `/v2/responses/${response.id}`, { key: suite.key });

    const [userItem] = await itemsOf(conversation);
    const deleted = await suite.app.request('DELETE', `/v2/conversations/${conversation}/items/${userItem.id}`, {
      key: suite.key,
    });
    expect(deleted.body).toEqual({ id: userItem.id, object: 'conversation.item.deleted', deleted: true });

    const after = await suite.app.request('GET', `/v2/responses/${response.id}`, { key: suite.key });
    expect(after.body).toEqual(before.body);
    expect(after.body).toEqual(response);
    // The next Response sees only what is left: the assistant's 3 words plus its own 1.
    const next = await run({ conversation, input: 'ok' });
    expect(next.usage.input_tokens).toBe(4);
  });

  describe('context window (dev-echo: 16384 tokens, estimated as characters / 4 plus 4 per item)', () => {
    // Oldest item: 3000 words, then four of 4000 words ("bbb " is 4 characters: one estimated token per word).
    const words = (word: string, count: number) => Array.from({ length: count }, () => word).join(' ');
    let conversation: string;
    beforeAll(async () => {
      const catalog = await suite.app.request('GET', '/v2/models/dev-echo', { key: suite.key });
      expect(catalog.body.context_window).toBe(16384);
      conversation = await newConversation([
        { type: 'message', role: 'user', content: words('aaa', 3000) },
        ...Array.from({ length: 4 }, () => ({ type: 'message', role: 'user', content: words('bbb', 4000) })),
      ]);
    });

    it('truncation disabled (the default): 400 response.context_length_exceeded, nothing written', async () => {
      const before = await suite.app.db.selectFrom('responses').select('id').execute();
      for (const truncation of [undefined, 'disabled']) {
        const reply = await createResponse(suite.app, suite.key, {
          conversation,
          input: 'hi',
          ...(truncation ? { truncation } : {}),
        });
        expect(reply.status).toBe(400);
        expect(reply.body).toEqual({
          error: { code: 'response.context_length_exceeded', message: expect.stringContaining('16384') },
        });
      }
      expect(await suite.app.db.selectFrom('responses').select('id').execute()).toEqual(before);
      expect(await itemsOf(conversation)).toHaveLength(5);
    });

    it('truncation auto drops the oldest history items until the input fits', async () => {
      const response = await run({ conversation, input: 'hi', truncation: 'auto' });
      // The 3000-word item went; the four newer ones (16000 words) and the input stay.
      expect(response.usage.input_tokens).toBe(4 * 4000 + 1);
      expect(outputText(response)).toBe('hi');
      // History is not deleted by truncation.
      expect(await itemsOf(conversation)).toHaveLength(7);
    });

    it('message_limit applies before the window check', async () => {
      const response = await run({ conversation, input: 'hi', message_limit: 3 });
      // The latest 3 items: the previous 'hi' exchange and one 4000-word item.
      expect(response.usage.input_tokens).toBe(4000 + 1 + 1 + 1);
    });

    it('an input that alone exceeds the window is refused even with truncation auto', async () => {
      const huge = words('word', 14_000); // 70 000 characters ≈ 17 500 tokens
      for (const truncation of ['auto', 'disabled']) {
        const reply = await createResponse(suite.app, suite.key, { input: huge, truncation });
        expect([reply.status, reply.body.error?.code]).toEqual([400, 'response.context_length_exceeded']);
      }
    });
  });
});
