import { createDevProvider, DEV_EMBEDDING_DIMENSIONS } from '../../src/providers/dev/dev-provider';
import {
  ProviderError,
  type GenerateTextRequest,
  type PromptItem,
  type TextStreamPart,
} from '../../src/providers/provider';

const { languageModel, embeddingModel } = createDevProvider();
const llm = languageModel!;
const embedder = embeddingModel!;

const user = (text: string): PromptItem => ({ type: 'message', role: 'user', text });
const ask = (text: string, extra: Partial<GenerateTextRequest> = {}): GenerateTextRequest => ({
  model: 'dev-echo',
  items: [user(text)],
  ...extra,
});

async function collect(request: GenerateTextRequest): Promise<TextStreamPart[]> {
  const parts: TextStreamPart[] = [];
  for await (const part of llm.streamText(request)) parts.push(part);
  return parts;
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (ProviderError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ProviderError');
}

describe('dev-echo', () => {
  it('echoes the latest user message with its whitespace kept, counting words as tokens', async () => {
    const result = await llm.generateText(ask('Hello   there,\n general  Kenobi'));
    expect(result).toEqual({
      text: 'Hello   there,\n general  Kenobi',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 4, outputTokens: 4 },
    });
    // Streamed: one delta per word, each with the whitespace before it; together the text exactly.
    const parts = await collect(ask('  a\tb\n\nc  '));
    const deltas = parts.filter((part) => part.type === 'text-delta').map((part) => (part as { text: string }).text);
    expect(deltas).toEqual(['  a', '\tb', '\n\nc  ']);
    expect((await llm.generateText(ask('/delay 1 x\n  y'))).text).toBe('x\n  y');
  });

  it('honours tool_choice: none answers a /call as text, required and a named function make a call', async () => {
    const tools = [
      { name: 'get_weather', description: 'weather', parameters: { type: 'object' } },
      { name: 'other', parameters: { type: 'object' } },
    ];
    const none = await llm.generateText(ask('/call get_weather {"city": "Oslo"}', { tools, toolChoice: 'none' }));
    expect(none).toMatchObject({ text: '/call get_weather {"city": "Oslo"}', toolCalls: [], finishReason: 'stop' });
    const required = await llm.generateText(ask('just chatting', { tools, toolChoice: 'required' }));
    expect(required).toMatchObject({
      text: '',
      toolCalls: [{ name: 'get_weather', arguments: '{}' }],
      finishReason: 'tool_calls',
    });
    const named = await llm.generateText(
      ask('/call get_weather {"city": "Oslo"}', { tools, toolChoice: { type: 'function', name: 'other' } }),
    );
    expect(named.toolCalls).toEqual([
      { callId: expect.stringMatching(/^call_/), name: 'other', arguments: '{"city": "Oslo"}' },
    ]);
    const auto = await llm.generateText(ask('just chatting', { tools, toolChoice: 'auto' }));
    expect(auto).toMatchObject({ text: 'just chatting', toolCalls: [] });
  });

  it('counts every word sent: instructions, history, function calls and outputs, input', async () => {
    const result = await llm.generateText({
      model: 'dev-echo',
      instructions: 'be brief please', // 3
      items: [
        user('first question here'), // 3
        { type: 'message', role: 'assistant', text: 'an answer' }, // 2
        { type: 'function_call', callId: 'call_1', name: 'lookup', arguments: '{"q": "x y"}' }, // 1 + 3
        { type: 'function_call_output', callId: 'call_1', output: 'found it' }, // 2
        { type: 'message', role: 'system', text: 'system note' }, // 2
        user('and now this'), // 3
      ],
    });
    expect(result.text).toBe('and now this');
    expect(result.usage).toEqual({ inputTokens: 3 + 3 + 2 + 4 + 2 + 2 + 3, outputTokens: 3 });
  });

  it('streams the first word, then " word" deltas that concatenate to the text, then one finish', async () => {
    const parts = await collect(ask('one two three'));
    expect(parts).toEqual([
      { type: 'text-delta', text: 'one' },
      { type: 'text-delta', text: ' two' },
      { type: 'text-delta', text: ' three' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 3, outputTokens: 3 } },
    ]);
  });

  it('/words N replies with w1 ... wN', async () => {
    const result = await llm.generateText(ask('/words 5'));
    expect(result.text).toBe('w1 w2 w3 w4 w5');
    expect(result.usage).toEqual({ inputTokens: 2, outputTokens: 5 });
    expect((await llm.generateText(ask('/words 0'))).text).toBe('');
    const big = await llm.generateText(ask('/words 3000'));
    expect(big.text.split(' ')).toHaveLength(3000);
    expect(big.text.endsWith(' w3000')).toBe(true);
  });

  it('stops at maxOutputTokens with finishReason length', async () => {
    const parts = await collect(ask('/words 10', { maxOutputTokens: 4 }));
    expect(parts.filter((part) => part.type === 'text-delta')).toHaveLength(4);
    expect(parts.at(-1)).toEqual({
      type: 'finish',
      finishReason: 'length',
      usage: { inputTokens: 2, outputTokens: 4 },
    });
    const exact = await llm.generateText(ask('a b c', { maxOutputTokens: 3 }));
    expect(exact).toMatchObject({ text: 'a b c', finishReason: 'stop' });
    expect(await llm.generateText(ask('a b c', { maxOutputTokens: 0 }))).toMatchObject({
      text: '',
      finishReason: 'length',
      usage: { outputTokens: 0 },
    });
  });

  it('/call NAME JSON returns one tool call and finishes with tool_calls', async () => {
    const parts = await collect(ask('/call get_weather {"city": "Paris", "unit": "c"}'));
    expect(parts).toEqual([
      {
        type: 'tool-call',
        callId: expect.stringMatching(/^call_[0-9a-f]{24}$/),
        name: 'get_weather',
        arguments: '{"city": "Paris", "unit": "c"}',
      },
      { type: 'finish', finishReason: 'tool_calls', usage: { inputTokens: 6, outputTokens: 5 } },
    ]);
    const result = await llm.generateText(ask('/call ping'));
    expect(result).toEqual({
      text: '',
      toolCalls: [{ callId: expect.stringMatching(/^call_/), name: 'ping', arguments: '{}' }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 2, outputTokens: 2 },
    });
    const again = await llm.generateText(ask('/call ping'));
    expect(again.toolCalls[0].callId).not.toBe(result.toolCalls[0].callId);
    expect((await failure(llm.generateText(ask('/call')))).kind).toBe('bad_request');
  });

  it('completes a function-call round trip: the reply quotes the tool output', async () => {
    const result = await llm.generateText({
      model: 'dev-echo',
      items: [
        user('/call get_weather {"city":"Paris"}'),
        { type: 'function_call', callId: 'call_abc', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', callId: 'call_abc', output: 'sunny, 21 C' },
      ],
    });
    expect(result).toMatchObject({
      text: 'Tool get_weather returned: sunny, 21 C',
      toolCalls: [],
      finishReason: 'stop',
    });
    expect(result.usage).toEqual({ inputTokens: 3 + 2 + 3, outputTokens: 6 });
    const named = await llm.generateText({
      model: 'dev-echo',
      items: [{ type: 'function_call_output', callId: 'c1', name: 'clock', output: 'noon' }],
    });
    expect(named.text).toBe('Tool clock returned: noon');
  });

  it('/error fails the call with a ProviderError (server by default, or the kind given)', async () => {
    const server = await failure(llm.generateText(ask('/error')));
    expect(server).toMatchObject({ kind: 'server', vendor: 'dev' });
    const streamed = await failure(collect(ask('/error')));
    expect(streamed.kind).toBe('server');
    expect((await failure(llm.generateText(ask('/error rate_limit')))).kind).toBe('rate_limit');
    expect((await failure(llm.generateText(ask('/error whatever')))).kind).toBe('bad_request');
  });

  it('treats directives only at the start of the latest user message, and rejects malformed ones', async () => {
    expect((await llm.generateText(ask('please /words 3'))).text).toBe('please /words 3');
    expect((await llm.generateText(ask('/wordsmith at work'))).text).toBe('/wordsmith at work');
    expect(
      (
        await llm.generateText({
          model: 'dev-echo',
          items: [user('/error'), { type: 'message', role: 'assistant', text: 'x' }, user('fine')],
        })
      ).text,
    ).toBe('fine');
    for (const text of ['/words many', '/words -1', '/words 100001', '/delay', '/delay soon hi', '/delay 60001 hi']) {
      expect((await failure(llm.generateText(ask(text)))).kind).toBe('bad_request');
    }
    expect((await failure(llm.generateText({ model: 'gpt-4', items: [user('hi')] }))).kind).toBe('not_found');
    expect(await llm.generateText({ model: 'dev-echo', items: [] })).toMatchObject({
      text: '',
      finishReason: 'stop',
      usage: { inputTokens: 0, outputTokens: 0 },
    });
  });

  it('/delay MS streams word by word with MS between words, and chains with another directive', async () => {
    const started = Date.now();
    const arrivals: number[] = [];
    for await (const part of llm.streamText(ask('/delay 60 alpha beta gamma'))) {
      if (part.type === 'text-delta') arrivals.push(Date.now() - started);
      else expect(part).toEqual({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 5, outputTokens: 3 } });
    }
    expect(arrivals).toHaveLength(3);
    expect(arrivals[0]).toBeLessThan(50);
    expect(arrivals[1] - arrivals[0]).toBeGreaterThanOrEqual(55);
    expect(arrivals[2] - arrivals[1]).toBeGreaterThanOrEqual(55);
    const chained = await llm.generateText(ask('/delay 1 /words 4'));
    expect(chained.text).toBe('w1 w2 w3 w4');
    const call = await llm.generateText(ask('/delay 1 /call f {}'));
    expect(call.toolCalls).toEqual([{ callId: expect.any(String), name: 'f', arguments: '{}' }]);
  });

  it('cancels promptly through the AbortSignal, mid-stream and mid-generate', async () => {
    const controller = new AbortController();
    const iterator = llm.streamText(ask('/delay 10000 a b c', { signal: controller.signal }))[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', text: 'a' });
    const pending = iterator.next();
    const abortedAt = Date.now();
    controller.abort();
    const error = await failure(pending);
    expect(error.kind).toBe('cancelled');
    expect(Date.now() - abortedAt).toBeLessThan(1000);

    const second = new AbortController();
    const generating = llm.generateText(ask('/delay 10000 x y', { signal: second.signal }));
    setImmediate(() => second.abort(new Error('client went away')));
    const started = Date.now();
    expect((await failure(generating)).kind).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(1000);

    const already = new AbortController();
    already.abort();
    expect((await failure(llm.generateText(ask('hi', { signal: already.signal })))).kind).toBe('cancelled');
    expect((await failure(embedder.embed({ model: 'dev-embed', input: 'hi', signal: already.signal }))).kind).toBe(
      'cancelled',
    );
  });
});

describe('dev-embed', () => {
  const embed = async (input: string) => (await embedder.embed({ model: 'dev-embed', input })).embedding;
  const dot = (a: number[], b: number[]) => a.reduce((sum, value, index) => sum + value * b[index], 0);

  it('returns deterministic 256-dimension unit vectors with the word count as usage', async () => {
    const result = await embedder.embed({ model: 'dev-embed', input: 'The quick brown fox jumps' });
    expect(result.usage).toEqual({ inputTokens: 5 });
    expect(result.embedding).toHaveLength(DEV_EMBEDDING_DIMENSIONS);
    expect(DEV_EMBEDDING_DIMENSIONS).toBe(256);
    expect(Math.abs(Math.sqrt(dot(result.embedding, result.embedding)) - 1)).toBeLessThan(1e-12);
    expect(await embed('The quick brown fox jumps')).toEqual(result.embedding);
    // A fresh provider (another process) gives the same vector.
    expect(
      (await createDevProvider().embeddingModel!.embed({ model: 'dev-embed', input: 'The quick brown fox jumps' }))
        .embedding,
    ).toEqual(result.embedding);
    for (const text of ['x', 'a a a a', 'word '.repeat(500), 'Привет, мир!']) {
      const vector = await embed(text);
      expect(Math.abs(Math.sqrt(dot(vector, vector)) - 1)).toBeLessThan(1e-12);
    }
  });

  it('hashes lower-cased words: case and edge punctuation do not matter, content does', async () => {
    expect(await embed('Hello, World!')).toEqual(await embed('hello world'));
    const base = await embed('the cat sat on the mat');
    const similar = await embed('the cat sat on a mat');
    const different = await embed('quarterly revenue grew sharply');
    expect(dot(base, similar)).toBeGreaterThan(dot(base, different));
    expect(base).not.toEqual(different);
  });

  it('rejects input without words and unknown models', async () => {
    expect((await failure(embedder.embed({ model: 'dev-embed', input: '   ' }))).kind).toBe('bad_request');
    expect((await failure(embedder.embed({ model: 'text-embedding-3-small', input: 'x' }))).kind).toBe('not_found');
  });
});
