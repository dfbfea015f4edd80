import { useTestApp } from '../support/harness';
import { isTerminal, type SseEvent } from '../support/sse';
import {
  createResponse,
  openCreateStream,
  openResumeStream,
  outputText,
  readUntilFirstDelta,
  waitForFinal,
  wordList,
} from './helpers';

/** The token details OpenAI's reference requires in a Response's usage (none are counted separately here). */
const OPENAI_TOKEN_DETAILS = {
  input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
  output_tokens_details: { reasoning_tokens: 0 },
};

/** Spec: Responses (background, synchronous, stream), Events (SSE), stream resume; DECISIONS 14. */
describe('responses: background, synchronous and streamed modes', () => {
  const suite = useTestApp();

  const expectGapFree = (events: SseEvent[], first = 0) => {
    events.forEach((event, index) => {
      expect(event.data.type).toBe(event.event);
      expect(event.data.sequence_number).toBe(first + index);
    });
  };

  it('background (the default) replies queued with empty output, then completes with output and usage', async () => {
    const created = await createResponse(suite.app, suite.key, { input: 'alpha beta gamma' });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^resp_/),
      object: 'response',
      status: 'queued',
      background: true,
      model: 'dev-echo',
      output: [],
      usage: null,
      error: null,
    });
    expect(created.body.created_at).toEqual(expect.any(Number));

    const final = await waitForFinal(suite.app, suite.key, created.body.id);
    expect(final).toMatchObject({
      id: created.body.id,
      object: 'response',
      status: 'completed',
      background: true,
      error: null,
    });
    expect(final.output).toEqual([
      {
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'alpha beta gamma', annotations: [], logprobs: [] }],
      },
    ]);
    expect(final.usage).toEqual({
      input_tokens: 3,
      output_tokens: 3,
      total_tokens: 6,
      cost: expect.any(Number),
      ...OPENAI_TOKEN_DETAILS,
    });
    expect(final.usage.cost).toBeGreaterThan(0);
    expect(final.completed_at).toBeGreaterThanOrEqual(final.created_at);
  });

  it('background: false waits and replies with the final Response', async () => {
    const reply = await createResponse(suite.app, suite.key, { input: '/words 7', background: false });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: 'completed', background: false, error: null });
    expect(outputText(reply.body)).toBe(wordList(7));
    expect(reply.body.usage).toMatchObject({ input_tokens: 2, output_tokens: 7, total_tokens: 9 });
    // The reply is the stored Response.
    const stored = await suite.app.request('GET', `/v2/responses/${reply.body.id}`, { key: suite.key });
    expect(stored.body).toEqual(reply.body);
  });

  it('stores the whole event stream of a synchronous Response, for a later GET ?stream=true', async () => {
    // Nobody reads a synchronous Response's stream live (its id arrives with the final reply), so its vendor call
    // does not stream; the events it stores are still the spec's, gap-free, ending with the final Response.
    const reply = await createResponse(suite.app, suite.key, { input: '/words 9', background: false });
    expect(reply.body.status).toBe('completed');
    const events = await (await openResumeStream(suite.app, suite.key, reply.body.id)).readAll();
    expectGapFree(events);
    expect(events.map((event) => event.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...events.filter((event) => event.event === 'response.output_text.delta').map(() => 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const deltas = events
      .filter((event) => event.event === 'response.output_text.delta')
      .map((event) => event.data.delta);
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.join('')).toBe(wordList(9));
    expect(events.at(-1)!.data.response).toEqual(reply.body);

    const call = await createResponse(suite.app, suite.key, {
      input: '/call lookup {"city":"Oslo"}',
      background: false,
      tools: [
        { type: 'function', name: 'lookup', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      ],
    });
    expect(call.body.output).toEqual([
      expect.objectContaining({ type: 'function_call', name: 'lookup', arguments: '{"city":"Oslo"}' }),
    ]);
    const callEvents = await (await openResumeStream(suite.app, suite.key, call.body.id)).readAll();
    expectGapFree(callEvents);
    expect(
      callEvents.filter((event) => event.event === 'response.output_item.done').map((event) => event.data.item),
    ).toEqual(call.body.output);
    expect(callEvents.at(-1)!.data.response).toEqual(call.body);
  });

  it("streams the spec events (and OpenAI's content_part events around the text), gap-free, with deltas that add up to the final text", async () => {
    const stream = await openCreateStream(suite.app, suite.key, { input: '/delay 10 /words 30' });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await stream.readAll();

    const names = events.map((event) => event.event);
    const deltas = events.filter((event) => event.event === 'response.output_text.delta');
    // 30 words over ~300 ms are batched (50 ms) into several deltas, never one per word nor a single one.
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(deltas.length).toBeLessThanOrEqual(30);
    expect(names).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...deltas.map(() => 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expectGapFree(events);

    const [created, inProgress, added, partAdded] = events;
    const id = created.data.response.id;
    // The spec's {id, status}, within the whole Response object as it was then (what the OpenAI SDK's stream helper reads).
    const lifecycle = {
      id,
      object: 'response',
      status: expect.any(String),
      model: 'dev-echo',
      output: [],
      usage: null,
      error: null,
      completed_at: null,
      tools: [],
      metadata: {},
    };
    expect(created.data).toEqual({
      type: 'response.created',
      sequence_number: 0,
      response: expect.objectContaining({ ...lifecycle, status: 'queued' }),
    });
    expect(inProgress.data).toEqual({
      type: 'response.in_progress',
      sequence_number: 1,
      response: expect.objectContaining({ ...lifecycle, status: 'in_progress' }),
    });
    const final = events.at(-1)!.data.response;
    for (const field of ['id', 'created_at', 'model', 'instructions', 'temperature', 'tool_choice', 'truncation'])
      expect(created.data.response[field]).toEqual(final[field]);
    const itemId = added.data.item.id;
    expect(added.data).toEqual({
      type: 'response.output_item.added',
      sequence_number: 2,
      output_index: 0,
      item: { id: itemId, type: 'message', role: 'assistant', status: 'in_progress', content: [] },
    });
    expect(partAdded.data).toEqual({
      type: 'response.content_part.added',
      sequence_number: 3,
      output_index: 0,
      content_index: 0,
      item_id: itemId,
      part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
    });
    const partDone = events.find((event) => event.event === 'response.content_part.done')!;
    expect(partDone.data).toMatchObject({
      output_index: 0,
      content_index: 0,
      item_id: itemId,
      part: { type: 'output_text', text: events.at(-1)!.data.response.output[0].content[0].text, annotations: [] },
    });
    for (const delta of deltas) {
      expect(delta.data).toEqual({
        type: 'response.output_text.delta',
        sequence_number: delta.data.sequence_number,
        output_index: 0,
        content_index: 0,
        item_id: itemId,
        delta: expect.any(String),
        logprobs: [],
      });
    }
    const text = deltas.map((delta) => delta.data.delta).join('');
    expect(text).toBe(wordList(30));

    const [textDone, , itemDone, completed] = events.slice(-4);
    expect(textDone.data).toEqual({
      type: 'response.output_text.done',
      sequence_number: textDone.data.sequence_number,
      output_index: 0,
      content_index: 0,
      item_id: itemId,
      text,
      logprobs: [],
    });
    expect(itemDone.data).toEqual({
      type: 'response.output_item.done',
      sequence_number: itemDone.data.sequence_number,
      output_index: 0,
      item: {
        id: itemId,
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
      },
    });

    // The final event carries the full Response, the same one GET returns afterwards.
    const response = completed.data.response;
    expect(response).toMatchObject({ id, object: 'response', status: 'completed', background: false, error: null });
    expect(response.output).toEqual([itemDone.data.item]);
    expect(response.usage).toEqual({
      input_tokens: 4,
      output_tokens: 30,
      total_tokens: 34,
      cost: expect.any(Number),
      ...OPENAI_TOKEN_DETAILS,
    });
    const stored = await suite.app.request('GET', `/v2/responses/${id}`, { key: suite.key });
    expect(stored.body).toEqual(response);
    expect(outputText(stored.body)).toBe(text);
  });

  it('max_output_tokens reached: incomplete, with incomplete_details and the truncated text (DECISIONS 16)', async () => {
    const sync = await createResponse(suite.app, suite.key, {
      input: '/words 10',
      max_output_tokens: 4,
      background: false,
    });
    expect(sync.body).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      error: null,
      max_output_tokens: 4,
    });
    expect(sync.body.output).toEqual([
      expect.objectContaining({
        type: 'message',
        status: 'incomplete',
        content: [{ type: 'output_text', text: wordList(4), annotations: [], logprobs: [] }],
      }),
    ]);
    expect(sync.body.usage).toMatchObject({ input_tokens: 2, output_tokens: 4 });

    const events = await (
      await openCreateStream(suite.app, suite.key, { input: '/words 10', max_output_tokens: 4 })
    ).readAll();
    const last = events.at(-1)!;
    expect(last.event).toBe('response.incomplete');
    expect(last.data.response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
    expectGapFree(events);
  });

  it('replays a finished stream from any point with starting_after', async () => {
    const original = await (await openCreateStream(suite.app, suite.key, { input: '/delay 5 /words 12' })).readAll();
    const id = original[0].data.response.id;
    expect(original.at(-1)!.event).toBe('response.completed');

    const full = await (await openResumeStream(suite.app, suite.key, id)).readAll();
    expect(full).toEqual(original);
    for (const after of [0, 3, original.length - 2]) {
      const replay = await (await openResumeStream(suite.app, suite.key, id, after)).readAll();
      expect(replay).toEqual(original.slice(after + 1));
    }
    // After the terminal event there is nothing more to send: the stream ends at once.
    const tail = await openResumeStream(suite.app, suite.key, id, original.length - 1);
    expect(await tail.readAll()).toEqual([]);
  });

  it('a resumed stream of a running Response replays, then follows it live to the end', async () => {
    const created = await createResponse(suite.app, suite.key, { input: '/delay 100 /words 20' });
    const id = created.body.id;
    const first = await openResumeStream(suite.app, suite.key, id);
    const head = await readUntilFirstDelta(first);
    const after = head.at(-1)!.data.sequence_number;

    // Still generating (19 words × 100 ms remain) when the second reader joins.
    expect((await suite.app.request('GET', `/v2/responses/${id}`, { key: suite.key })).body.status).toBe('in_progress');
    const second = await openResumeStream(suite.app, suite.key, id, after);
    const [rest, resumed] = await Promise.all([first.readAll(), second.readAll()]);

    expect(resumed).toEqual(rest);
    expect(resumed[0].data.sequence_number).toBe(after + 1);
    expectGapFree(resumed, after + 1);
    expect(resumed.at(-1)!.event).toBe('response.completed');
    const deltas = [...head, ...rest].filter((event) => event.event === 'response.output_text.delta');
    expect(deltas.map((event) => event.data.delta).join('')).toBe(wordList(20));
    expect(outputText(resumed.at(-1)!.data.response)).toBe(wordList(20));
  });

  it('keeps generating after the streaming client disconnects', async () => {
    const stream = await openCreateStream(suite.app, suite.key, { input: '/delay 20 /words 30' });
    const head = await readUntilFirstDelta(stream);
    const id = head[0].data.response.id;
    stream.abort();

    const resumed = await (await openResumeStream(suite.app, suite.key, id)).readAll();
    const last = resumed.at(-1)!;
    expect(isTerminal(last)).toBe(true);
    expect(last.event).toBe('response.completed');
    expectGapFree(resumed);
    const final = await suite.app.request('GET', `/v2/responses/${id}`, { key: suite.key });
    expect(final.body.status).toBe('completed');
    expect(outputText(final.body)).toBe(wordList(30));
    expect(final.body.usage).toMatchObject({ output_tokens: 30 });
  });

  it('answers GET of an unknown Response with 404 in the envelope, also as a stream', async () => {
    const plain = await suite.app.request('GET', '/v2/responses/resp_missing', { key: suite.key });
    expect(plain.status).toBe(404);
    expect(plain.body).toEqual({ error: { code: 'response.not_found', message: expect.any(String) } });
    const stream = await openResumeStream(suite.app, suite.key, 'resp_missing');
    expect(stream.status).toBe(404);
    expect(stream.errorBody).toEqual({ error: { code: 'response.not_found', message: expect.any(String) } });
  });
});
