import type { RecordedRequest } from './fake-script';
import {
  presentedKey,
  splitInTwo,
  startFakeVendorServer,
  type FakeServerOptions,
  type FakeVendorServer,
  type IdSource,
  type ResolvedStep,
  type SseEvent,
  type VendorProtocol,
  type VendorReply,
} from './fake-vendor-server';

/**
 * OpenAI on loopback: `POST /v1/responses` (JSON or SSE with response.created … response.completed),
 * `POST /v1/chat/completions` (JSON or `data:` chunks ending in `[DONE]`, usage chunk only when
 * `stream_options.include_usage` is set — so it also serves as the OpenAI-compatible fake) and
 * `POST /v1/embeddings`, `POST /v1/audio/speech` (MP3 bytes) and `POST /v1/audio/transcriptions` (multipart in,
 * `verbose_json` out: the step's text split over two segments). Payload shapes follow the API reference and
 * recorded traffic.
 */

/** What the fake's speech endpoint answers: an MPEG-1 Layer III frame header and padding (the client only relays it). */
export const FAKE_SPEECH_MP3 = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(413, 0x55)]);

function transcription(step: ResolvedStep) {
  const text = step.text ?? 'Hello from the fake vendor.';
  const [first, second] = splitInTwo(text);
  const segment = (id: number, start: number, end: number, words: string) => ({
    id,
    seek: 0,
    start,
    end,
    text: ` ${words}`,
    tokens: [50364, 2425],
    temperature: 0,
    avg_logprob: -0.2,
    compression_ratio: 1.1,
    no_speech_prob: 0.01,
  });
  return {
    task: 'transcribe',
    language: 'english',
    duration: 4.2,
    text,
    segments: [segment(0, 0, 2.1, first!.trim()), segment(1, 2.1, 4.2, (second ?? '').trim())],
  };
}
export function startFakeOpenAI(options?: FakeServerOptions): Promise<FakeVendorServer> {
  return startFakeVendorServer(openAIProtocol, options);
}

const openAIProtocol: VendorProtocol = {
  basePath: '/v1',
  requestIdHeader: 'x-request-id',
  openingEvents: 1,
  isStream: (_path, rawBody) => rawBody.includes('"stream":true'),
  reply(request, step, ids) {
    if (request.method !== 'POST') return undefined;
    switch (request.path) {
      case '/v1/responses':
        return request.stream
          ? responsesStream(request, step, ids)
          : { kind: 'json', body: responseObject(request, step, ids) };
      case '/v1/chat/completions':
        return request.stream
          ? chatStream(request, step, ids)
          : { kind: 'json', body: chatCompletion(request, step, ids) };
      case '/v1/embeddings':
        return { kind: 'json', body: embeddings(request, step) };
      case '/v1/audio/speech':
        return { kind: 'binary', contentType: 'audio/mpeg', body: FAKE_SPEECH_MP3 };
      case '/v1/audio/transcriptions':
        return { kind: 'json', body: transcription(step) };
      default:
        return undefined;
    }
  },
  streamErrorEvent(request) {
    const message = 'The server had an error while processing your request. Sorry about that!';
    if (request.path === '/v1/chat/completions') {
      return { data: JSON.stringify({ error: { message, type: 'server_error', param: null, code: null } }) };
    }
    return {
      event: 'error',
      data: JSON.stringify({ type: 'error', code: 'server_error', message, param: null, sequence_number: 99 }),
    };
  },
  errorBody(status, message, request) {
    const [type, code, defaultMessage] = openAIError(status, request);
    return { error: { message: message ?? defaultMessage, type, param: null, code } };
  },
};

function openAIError(status: number, request: RecordedRequest): [string, string | null, string] {
  switch (status) {
    case 401:
      // OpenAI quotes the rejected key back (masked in production; whole here, to prove we never repeat it).
      return [
        'invalid_request_error',
        'invalid_api_key',
        `Incorrect API key provided: ${presentedKey(request)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      ];
    case 403:
      return [
        'invalid_request_error',
        'unsupported_country_region_territory',
        'Country, region, or territory not supported',
      ];
    case 404:
      return [
        'invalid_request_error',
        'model_not_found',
        `The model \`${String(request.body?.model)}\` does not exist or you do not have access to it.`,
      ];
    case 429:
      return ['requests', 'rate_limit_exceeded', 'Rate limit reached for requests. Please try again in 1s.'];
    case 400:
    case 422:
      return ['invalid_request_error', null, "Invalid value for 'input'."];
    default:
      return ['server_error', null, 'The server had an error while processing your request. Sorry about that!'];
  }
}

// ---- Responses API ----

function responseObject(
  request: RecordedRequest,
  step: ResolvedStep,
  ids: IdSource,
  ready?: ReturnType<typeof responseItems>,
) {
  const items = ready ?? responseItems(step, ids);
  const incomplete = step.finishReason === 'length' || step.finishReason === 'content_filter';
  return {
    ...responseEnvelope(request, ids.next('resp_')),
    status: incomplete ? 'incomplete' : 'completed',
    incomplete_details: incomplete
      ? { reason: step.finishReason === 'length' ? 'max_output_tokens' : 'content_filter' }
      : null,
    output: items.map((item) => item.done),
    usage: responseUsage(step),
  };
}

function responseEnvelope(request: RecordedRequest, id: string) {
  const body = request.body ?? {};
  return {
    id,
    object: 'response',
    created_at: 1_767_225_600,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: `${String(body.model ?? 'gpt-4.1')}-2025-04-14`,
    output: [] as unknown[],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: null },
    service_tier: 'default',
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: { format: { type: 'text' }, verbosity: body.text?.verbosity ?? 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    usage: null as unknown,
    user: null,
    metadata: {},
  };
}

function responseUsage(step: ResolvedStep) {
  return {
    input_tokens: step.usage.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: step.usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: step.usage.inputTokens + step.usage.outputTokens,
  };
}

/** Output items in their final form, with what a stream needs to build them up. */
function responseItems(step: ResolvedStep, ids: IdSource) {
  const items: Array<{
    kind: 'message' | 'function_call';
    id: string;
    done: Record<string, unknown>;
    callId?: string;
  }> = [];
  if (step.text !== undefined) {
    const id = ids.next('msg_');
    items.push({
      kind: 'message',
      id,
      done: {
        type: 'message',
        id,
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: step.text, annotations: [], logprobs: [] }],
      },
    });
  }
  for (const call of step.toolCalls) {
    const id = ids.next('fc_');
    const callId = call.callId ?? ids.next('call_');
    items.push({
      kind: 'function_call',
      id,
      callId,
      done: {
        type: 'function_call',
        id,
        call_id: callId,
        name: call.name,
        arguments: call.arguments,
        status: 'completed',
      },
    });
  }
  return items;
}

function responsesStream(request: RecordedRequest, step: ResolvedStep, ids: IdSource): VendorReply {
  const events: SseEvent[] = [];
  let sequence = 0;
  const push = (type: string, payload: Record<string, unknown>, textDelta = false) => {
    events.push({ event: type, data: JSON.stringify({ type, sequence_number: sequence++, ...payload }), textDelta });
  };
  const items = responseItems(step, ids);
  const envelope = responseEnvelope(request, ids.next('resp_'));
  push('response.created', { response: envelope });
  push('response.in_progress', { response: envelope });
  items.forEach((item, outputIndex) => {
    if (item.kind === 'message') {
      push('response.output_item.added', {
        output_index: outputIndex,
        item: { type: 'message', id: item.id, status: 'in_progress', role: 'assistant', content: [] },
      });
      const emptyPart = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      push('response.content_part.added', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        part: emptyPart,
      });
      for (const delta of step.textChunks) {
        push(
          'response.output_text.delta',
          { item_id: item.id, output_index: outputIndex, content_index: 0, delta, logprobs: [] },
          true,
        );
      }
      push('response.output_text.done', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        text: step.text,
        logprobs: [],
      });
      push('response.content_part.done', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        part: { ...emptyPart, text: step.text },
      });
    } else {
      push('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item.done, arguments: '', status: 'in_progress' },
      });
      const args = String(item.done.arguments);
      for (const delta of splitInTwo(args)) {
        push('response.function_call_arguments.delta', { item_id: item.id, output_index: outputIndex, delta });
      }
      push('response.function_call_arguments.done', { item_id: item.id, output_index: outputIndex, arguments: args });
    }
    push('response.output_item.done', { output_index: outputIndex, item: item.done });
  });
  const final = { ...responseObject(request, step, ids, items), id: envelope.id };
  push(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
  return { kind: 'sse', events };
}

// ---- Chat Completions ----

function chatCompletion(request: RecordedRequest, step: ResolvedStep, ids: IdSource) {
  const toolCalls = step.toolCalls.map((call) => ({
    id: call.callId ?? ids.next('call_'),
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  return {
    id: ids.next('chatcmpl-'),
    object: 'chat.completion',
    created: 1_767_225_600,
    model: String(request.body?.model ?? 'gpt-4.1'),
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: step.text ?? null,
          refusal: null,
          annotations: [],
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: step.finishReason,
      },
    ],
    usage: chatUsage(step),
    service_tier: 'default',
    system_fingerprint: 'fp_fake0001',
  };
}

function chatUsage(step: ResolvedStep) {
  return {
    prompt_tokens: step.usage.inputTokens,
    completion_tokens: step.usage.outputTokens,
    total_tokens: step.usage.inputTokens + step.usage.outputTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function chatStream(request: RecordedRequest, step: ResolvedStep, ids: IdSource): VendorReply {
  const id = ids.next('chatcmpl-');
  const model = String(request.body?.model ?? 'gpt-4.1');
  const includeUsage = request.body?.stream_options?.include_usage === true;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: 1_767_225_600,
      model,
      service_tier: 'default',
      system_fingerprint: 'fp_fake0001',
      choices,
      ...(includeUsage ? { usage: null } : {}),
      ...extra,
    });
  const choice = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finishReason,
  });
  const events: SseEvent[] = [{ data: chunk([choice({ role: 'assistant', content: '', refusal: null })]) }];
  for (const delta of step.textChunks) events.push({ data: chunk([choice({ content: delta })]), textDelta: true });
  step.toolCalls.forEach((call, index) => {
    const [first, ...rest] = splitInTwo(call.arguments);
    events.push({
      data: chunk([
        choice({
          tool_calls: [
            {
              index,
              id: call.callId ?? ids.next('call_'),
              type: 'function',
              function: { name: call.name, arguments: first ?? '' },
            },
          ],
        }),
      ]),
    });
    for (const part of rest)
      events.push({ data: chunk([choice({ tool_calls: [{ index, function: { arguments: part } }] })]) });
  });
  events.push({ data: chunk([choice({}, step.finishReason)]) });
  if (includeUsage) events.push({ data: chunk([], { usage: chatUsage(step) }) });
  events.push({ data: '[DONE]' });
  return { kind: 'sse', events };
}

// ---- Embeddings ----

function embeddings(request: RecordedRequest, step: ResolvedStep) {
  const input: unknown = request.body?.input;
  const count = Array.isArray(input) ? input.length : 1;
  return {
    object: 'list',
    data: Array.from({ length: count }, (_, index) => ({ object: 'embedding', index, embedding: step.embedding })),
    model: String(request.body?.model ?? 'text-embedding-3-small'),
    usage: { prompt_tokens: step.usage.inputTokens, total_tokens: step.usage.inputTokens },
  };
}
