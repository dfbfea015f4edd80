import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenAIProvider } from '../../src/providers/openai/openai-provider';
import { sseData } from '../../src/providers/openai/openai-responses-stream';
import { ProviderError, type GenerateTextRequest, type VendorAdapterOptions } from '../../src/providers/provider';
import { createVendorFetch } from '../../src/providers/shared/vendor-fetch';
import { WEATHER_TOOL, collect } from './adapter-contract';

/**
 * The narrow OpenAI Responses stream path (openai-responses-stream.ts) against the AI SDK's own `doStream`: the
 * same raw event streams, served by a loopback server, read both ways, must give the same parts and the same
 * errors. The adapter takes the SDK path when it is given its own fetch, so both run through the same adapter.
 */

interface Served {
  status?: number;
  contentType?: string;
  body: string;
}

interface Recorded {
  headers: http.IncomingHttpHeaders;
  body: string;
}

let server: http.Server;
let baseURL: string;
let queue: Served[] = [];
let recorded: Recorded[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      recorded.push({ headers: req.headers, body });
      const reply = queue.shift() ?? {
        status: 500,
        contentType: 'application/json',
        body: '{"error":{"message":"nothing queued"}}',
      };
      res.writeHead(reply.status ?? 200, {
        'content-type': reply.contentType ?? 'text/event-stream',
        'x-request-id': 'req_raw',
      });
      res.end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  queue = [];
  recorded = [];
});

const options = (sdkPath: boolean): VendorAdapterOptions => ({
  vendor: 'openai',
  apiKey: 'sk-raw-0123456789abcdef',
  baseURL,
  timeoutMs: 5_000,
  maxRetries: 0,
  ...(sdkPath ? { fetch: createVendorFetch() } : {}),
});

const request = (extra: Partial<GenerateTextRequest> = {}): GenerateTextRequest => ({
  model: 'gpt-4.1',
  instructions: 'Be brief.',
  items: [{ type: 'message', role: 'user', text: 'Say hello.' }],
  ...extra,
});

/** Frames as OpenAI sends them: each numbered, each with its `event:` line. */
function sse(frames: Array<Record<string, unknown>>, lineEnd = '\n'): string {
  return frames
    .map(
      (frame, index) =>
        `event: ${String(frame.type)}${lineEnd}data: ${JSON.stringify({ ...frame, sequence_number: index })}${lineEnd}${lineEnd}`,
    )
    .join('');
}

const created = {
  type: 'response.created',
  response: { id: 'resp_1', created_at: 1, model: 'gpt-4.1', status: 'in_progress' },
};
const inProgress = {
  type: 'response.in_progress',
  response: { id: 'resp_1', created_at: 1, model: 'gpt-4.1', status: 'in_progress' },
};
const messageAdded = {
  type: 'response.output_item.added',
  output_index: 0,
  item: { type: 'message', id: 'msg_1', status: 'in_progress', role: 'assistant', content: [] },
};
const delta = (text: string) => ({
  type: 'response.output_text.delta',
  item_id: 'msg_1',
  output_index: 0,
  content_index: 0,
  delta: text,
  logprobs: [],
});
const messageDone = (text: string) => ({
  type: 'response.output_item.done',
  output_index: 0,
  item: {
    type: 'message',
    id: 'msg_1',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }],
  },
});
const usage = {
  input_tokens: 12,
  input_tokens_details: { cached_tokens: 2 },
  output_tokens: 7,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 19,
};
const completed = (extra: Record<string, unknown> = {}) => ({
  type: 'response.completed',
  response: {
    id: 'resp_1',
    created_at: 1,
    model: 'gpt-4.1',
    status: 'completed',
    incomplete_details: null,
    usage,
    ...extra,
  },
});
/** A function call item, done (in a stream's last event of the item, or in a whole Responses object). */
const callItem = (name: string, args: string, index = 1) => ({
  type: 'function_call',
  id: `fc_${index}`,
  call_id: `call_${index}`,
  name,
  arguments: args,
  status: 'completed',
});
const functionCall = (name: string, args: string, index = 1) => [
  {
    type: 'response.output_item.added',
    output_index: index,
    item: {
      type: 'function_call',
      id: `fc_${index}`,
      call_id: `call_${index}`,
      name,
      arguments: '',
      status: 'in_progress',
    },
  },
  { type: 'response.function_call_arguments.delta', item_id: `fc_${index}`, output_index: index, delta: args },
  { type: 'response.output_item.done', output_index: index, item: callItem(name, args, index) },
];

/** Streams both paths must read alike. */
const cases: Array<{ name: string; body: string; request?: Partial<GenerateTextRequest> }> = [
  {
    name: 'text deltas and usage',
    body: sse([
      created,
      inProgress,
      messageAdded,
      delta('Hello'),
      delta(' there.'),
      messageDone('Hello there.'),
      completed(),
    ]),
  },
  { name: 'CRLF line ends', body: sse([created, messageAdded, delta('Hi'), messageDone('Hi'), completed()], '\r\n') },
  {
    name: 'an empty delta, comments and unknown events',
    body: `: keep-alive\n\n${sse([created, { type: 'response.future_event', x: 1 }, messageAdded, delta(''), delta('ok'), completed()])}`,
  },
  {
    name: 'a refusal (content filter)',
    body: sse([
      created,
      messageAdded,
      { type: 'response.refusal.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'I cannot.' },
      { type: 'response.refusal.done', item_id: 'msg_1', output_index: 0, content_index: 0, refusal: 'I cannot.' },
      completed(),
    ]),
  },
  {
    name: 'a function call after text',
    body: sse([
      created,
      messageAdded,
      delta('Checking.'),
      messageDone('Checking.'),
      ...functionCall('get_weather', '{"city":"Oslo"}'),
      completed(),
    ]),
    request: { tools: [WEATHER_TOOL] },
  },
  {
    name: 'a function call with empty arguments',
    body: sse([created, ...functionCall('get_weather', ''), completed()]),
    request: { tools: [WEATHER_TOOL] },
  },
  {
    name: 'an undeclared parallel call, expanded into the declared functions',
    body: sse([
      created,
      ...functionCall(
        'parallel',
        JSON.stringify({
          tool_uses: [
            { recipient_name: 'functions.get_weather', parameters: { city: 'Oslo' } },
            { recipient_name: 'functions.get_weather', parameters: { city: 'Rome' } },
          ],
        }),
      ),
      completed(),
    ]),
    request: { tools: [WEATHER_TOOL] },
  },
  {
    name: 'a parallel call naming an unknown function, left as it came',
    body: sse([
      created,
      ...functionCall(
        'parallel',
        JSON.stringify({ tool_uses: [{ recipient_name: 'functions.nope', parameters: {} }] }),
      ),
      completed(),
    ]),
    request: { tools: [WEATHER_TOOL] },
  },
  {
    name: 'incomplete at max_output_tokens',
    body: sse([
      created,
      messageAdded,
      delta('Cut'),
      {
        type: 'response.incomplete',
        response: { id: 'resp_1', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage },
      },
    ]),
  },
  {
    name: 'incomplete for a content filter',
    body: sse([
      created,
      messageAdded,
      delta('Cut'),
      {
        type: 'response.incomplete',
        response: { id: 'resp_1', status: 'incomplete', incomplete_details: { reason: 'content_filter' }, usage },
      },
    ]),
  },
  {
    name: 'an error event before any output',
    body: sse([created, { type: 'error', code: 'server_error', message: 'The server had an error.', param: null }]),
  },
  {
    name: 'a rate-limit error event before any output',
    body: sse([created, { type: 'error', code: 'rate_limit_exceeded', message: 'Slow down.', param: null }]),
  },
  {
    name: 'an error event after output',
    body: sse([
      created,
      messageAdded,
      delta('Half'),
      { type: 'error', code: 'server_error', message: 'Broke mid-way.', param: null },
    ]),
  },
  {
    name: 'an error event with an HTTP status code',
    body: sse([
      created,
      messageAdded,
      delta('Half'),
      { type: 'error', error: { type: 'invalid_request_error', code: '400', message: 'Bad thing.' } },
    ]),
  },
  {
    name: 'response.failed with an error, before output',
    body: sse([
      created,
      {
        type: 'response.failed',
        response: {
          id: 'resp_1',
          status: 'failed',
          error: { code: 'server_error', message: 'Model crashed.' },
          usage: null,
        },
      },
    ]),
  },
  {
    name: 'response.failed with an error, after output',
    body: sse([
      created,
      messageAdded,
      delta('Half'),
      {
        type: 'response.failed',
        response: { id: 'resp_1', status: 'failed', error: { code: 'server_error', message: 'Model crashed.' }, usage },
      },
    ]),
  },
  {
    name: 'response.failed without an error',
    body: sse([
      created,
      messageAdded,
      delta('Half'),
      { type: 'response.failed', response: { id: 'resp_1', status: 'failed', error: null, usage } },
    ]),
  },
  { name: 'data that is not JSON', body: `${sse([created])}data: {not json\n\n` },
];

/** What both paths' failures are compared by: the classified error (with the vendor's request id when asked). */
function failureOf(error: unknown, withRequestId = false) {
  if (!ProviderError.isInstance(error)) return String(error);
  const { kind, status, message } = error;
  return withRequestId ? { kind, status, message, requestId: error.vendorRequestId } : { kind, status, message };
}

/** A request using every setting the body carries: both paths must send the same body for it. */
const EVERY_SETTING: Partial<GenerateTextRequest> = {
  tools: [WEATHER_TOOL],
  toolChoice: 'auto',
  temperature: 0.3,
  maxOutputTokens: 50,
  responseFormat: { type: 'json', schema: { type: 'object' }, name: 'reply' },
};

async function outcome(sdkPath: boolean, body: string, extra?: Partial<GenerateTextRequest>) {
  queue.push({ body });
  const { parts, error } = await collect(
    createOpenAIProvider(options(sdkPath)).languageModel!.streamText(request(extra)),
  );
  return { parts, error: error === undefined ? undefined : failureOf(error) };
}

describe('OpenAI Responses stream: the narrow path reads streams as the AI SDK does', () => {
  it.each(cases)('$name', async ({ body, request: extra }) => {
    const sdk = await outcome(true, body, extra);
    const narrow = await outcome(false, body, extra);
    expect(narrow).toEqual(sdk);
    // Not vacuous: every case yields parts or an error.
    expect(sdk.parts.length > 0 || sdk.error !== undefined).toBe(true);
  });

  it('sends the request the SDK sends: same body (with stream: true) and headers', async () => {
    const extra = EVERY_SETTING;
    const body = sse([created, messageAdded, delta('{}'), completed()]);
    await outcome(true, body, extra);
    await outcome(false, body, extra);
    const [sdk, narrow] = recorded;
    expect(JSON.parse(narrow!.body)).toEqual(JSON.parse(sdk!.body));
    expect(JSON.parse(narrow!.body)).toMatchObject({ stream: true, model: 'gpt-4.1', max_output_tokens: 50 });
    for (const name of ['authorization', 'content-type']) expect(narrow!.headers[name]).toBe(sdk!.headers[name]);
    expect(narrow!.headers['user-agent']).toContain('ai-sdk/openai/');
  });

  it('classifies HTTP errors as the SDK path does, quoting the vendor message', async () => {
    for (const status of [400, 401, 429, 500]) {
      const reply = {
        status,
        contentType: 'application/json',
        body: JSON.stringify({ error: { message: `Refused with ${status}.`, type: 'x', code: null } }),
      };
      queue.push(reply);
      const sdk = await collect(createOpenAIProvider(options(true)).languageModel!.streamText(request()));
      queue.push(reply);
      const narrow = await collect(createOpenAIProvider(options(false)).languageModel!.streamText(request()));
      expect(ProviderError.isInstance(narrow.error)).toBe(true);
      const pick = (error: unknown) => ({
        kind: (error as ProviderError).kind,
        status: (error as ProviderError).status,
        message: (error as ProviderError).message,
        requestId: (error as ProviderError).vendorRequestId,
      });
      expect(pick(narrow.error)).toEqual(pick(sdk.error));
    }
  });

  it('a stream that ends without completing is malformed (the SDK would report a finish with no usage)', async () => {
    const body = sse([created, messageAdded, delta('Half')]);
    const narrow = await outcome(false, body);
    expect(narrow.parts).toEqual([{ type: 'text-delta', text: 'Half' }]);
    expect(narrow.error).toMatchObject({ kind: 'malformed' });
    const sdk = await outcome(true, body);
    expect(sdk.parts.at(-1)).toMatchObject({
      type: 'finish',
      finishReason: 'other',
      usage: { inputTokens: 0, outputTokens: 0 },
    });
  });
});

describe('sseData: the event-stream framing', () => {
  async function read(chunks: string[]): Promise<string[]> {
    async function* source() {
      for (const chunk of chunks) yield chunk;
    }
    const events: string[] = [];
    for await (const data of sseData(source())) events.push(data);
    return events;
  }

  it('splits events on blank lines whatever the line ends, across any chunk boundary', async () => {
    const text = 'event: a\ndata: one\n\ndata: two\r\n\r\ndata: three\r\rdata:four\n\n';
    const whole = await read([text]);
    expect(whole).toEqual(['one', 'two', 'three', 'four']);
    // Every split point, including between the CR and LF of a CRLF.
    for (let cut = 1; cut < text.length; cut += 1)
      expect(await read([text.slice(0, cut), text.slice(cut)])).toEqual(whole);
    // One character at a time.
    expect(await read([...text])).toEqual(whole);
  });

  it('joins multi-line data with LF, skips comments and other fields, drops an event without its blank line', async () => {
    expect(await read([': comment\nid: 7\nretry: 10\ndata: a\ndata: b\n\n', 'data\n\n', 'data: last'])).toEqual([
      'a\nb',
      '',
    ]);
  });
});

/** A whole Responses object, as a non-streamed call answers. */
const responseObject = (output: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'resp_1',
    object: 'response',
    created_at: 1,
    model: 'gpt-4.1',
    status: 'completed',
    error: null,
    incomplete_details: null,
    output,
    usage,
    ...extra,
  });
const textMessage = (...texts: string[]) => ({
  type: 'message',
  id: 'msg_1',
  status: 'completed',
  role: 'assistant',
  content: texts.map((text) => ({ type: 'output_text', text, annotations: [], logprobs: [] })),
});

/** Replies both paths must read alike (the SDK's `doGenerate`, and generateResponse). */
const generateCases: Array<{ name: string; reply: Served; request?: Partial<GenerateTextRequest> }> = [
  { name: 'text and usage', reply: { body: responseObject([textMessage('Hello there.')]) } },
  {
    name: 'several parts and messages, a reasoning item skipped',
    reply: {
      body: responseObject([
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thinking.' }] },
        textMessage('One, ', 'two, '),
        { ...textMessage('three.'), id: 'msg_2' },
      ]),
    },
  },
  {
    name: 'a refusal (content filter)',
    reply: {
      body: responseObject([
        {
          type: 'message',
          id: 'msg_1',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'refusal', refusal: 'I cannot.' }],
        },
      ]),
    },
  },
  {
    name: 'function calls after text',
    reply: {
      body: responseObject([
        textMessage('Checking.'),
        callItem('get_weather', '{"city":"Paris"}'),
        callItem('get_weather', '{"city":"Rome"}', 2),
      ]),
    },
    request: { tools: [WEATHER_TOOL] },
  },
  {
    name: "a call of the undeclared 'parallel' tool, expanded into the declared functions",
    reply: {
      body: responseObject([
        callItem(
          'parallel',
          JSON.stringify({
            tool_uses: [
              { recipient_name: 'functions.get_weather', parameters: { city: 'Oslo' } },
              { recipient_name: 'functions.get_weather', parameters: { city: 'Bergen' } },
            ],
          }),
        ),
      ]),
    },
    request: { tools: [WEATHER_TOOL] },
  },
  {
    name: 'cut at the output cap (incomplete: max_output_tokens)',
    reply: {
      body: responseObject([textMessage('Half')], {
        status: 'incomplete',
        incomplete_details: { reason: 'max_output_tokens' },
      }),
    },
  },
  {
    name: 'incomplete: content_filter',
    reply: {
      body: responseObject([textMessage('Par')], {
        status: 'incomplete',
        incomplete_details: { reason: 'content_filter' },
      }),
    },
  },
  {
    name: 'no usage reported',
    reply: { body: responseObject([textMessage('Hi')], { usage: null }) },
  },
  {
    name: 'a response with an error (a 400, not retried)',
    reply: {
      body: responseObject([], {
        status: 'failed',
        error: { message: 'The prompt was refused.', type: 'invalid_request_error', code: 'refused' },
      }),
    },
  },
  { name: 'a 2xx reply that is not JSON', reply: { body: '<html>proxy error</html>' } },
  ...[400, 401, 429, 500].map((status) => ({
    name: `an HTTP ${status} with the vendor's message`,
    reply: {
      status,
      body: JSON.stringify({ error: { message: `Refused with ${status}.`, type: 'x', code: null } }),
    },
  })),
];

async function generated(sdkPath: boolean, reply: Served, extra?: Partial<GenerateTextRequest>) {
  queue.push({ contentType: 'application/json', ...reply });
  try {
    return { result: await createOpenAIProvider(options(sdkPath)).languageModel!.generateText(request(extra)) };
  } catch (error) {
    return { error: failureOf(error, true) };
  }
}

describe('OpenAI Responses, not streamed: the narrow path reads replies as the AI SDK does', () => {
  it.each(generateCases)('$name', async ({ reply, request: extra }) => {
    const sdk = await generated(true, reply, extra);
    const narrow = await generated(false, reply, extra);
    expect(narrow).toEqual(sdk);
  });

  it('the cases are not vacuous: results with text or calls, and errors of several kinds', async () => {
    const outcomes = [];
    for (const { reply, request: extra } of generateCases) outcomes.push(await generated(false, reply, extra));
    expect(outcomes.filter((outcome) => outcome.result?.text).length).toBeGreaterThanOrEqual(5);
    expect(outcomes.flatMap((outcome) => outcome.result?.toolCalls ?? []).length).toBe(4);
    expect(new Set(outcomes.map((outcome) => outcome.result?.finishReason).filter(Boolean))).toEqual(
      new Set(['stop', 'tool_calls', 'content_filter', 'length']),
    );
    expect(
      new Set(outcomes.flatMap((outcome) => (outcome.error ? [(outcome.error as { kind: string }).kind] : []))).size,
    ).toBeGreaterThanOrEqual(3);
  });

  it('an HTTP error without a JSON body: the same kind and status; the message names the status (the SDK leaves it empty)', async () => {
    const reply = { status: 503, contentType: 'text/plain', body: 'busy' };
    const sdk = await generated(true, reply);
    const narrow = await generated(false, reply);
    expect(narrow.error).toEqual({ ...(sdk.error as object), message: 'openai answered HTTP 503: HTTP 503' });
    expect(sdk.error).toMatchObject({ kind: 'server', status: 503 });
  });

  it('sends the request the SDK sends: same body (no stream flag) and headers', async () => {
    const extra = EVERY_SETTING;
    const reply = { body: responseObject([textMessage('{}')]) };
    await generated(true, reply, extra);
    await generated(false, reply, extra);
    const [sdk, narrow] = recorded;
    expect(JSON.parse(narrow!.body)).toEqual(JSON.parse(sdk!.body));
    expect(JSON.parse(narrow!.body)).toMatchObject({ model: 'gpt-4.1', max_output_tokens: 50 });
    expect(JSON.parse(narrow!.body).stream).toBeUndefined();
    for (const name of ['authorization', 'content-type']) expect(narrow!.headers[name]).toBe(sdk!.headers[name]);
    expect(narrow!.headers['user-agent']).toContain('ai-sdk/openai/');
  });
});
