import type { RecordedRequest } from './fake-script';
import {
  splitInTwo,
  startFakeVendorServer,
  type FakeServerOptions,
  type FakeVendorServer,
  type IdSource,
  type ResolvedStep,
  type SseEvent,
  type VendorProtocol,
} from './fake-vendor-server';

/**
 * Anthropic Messages on loopback: `POST /v1/messages`, JSON or SSE (message_start, content_block_start /
 * ping / content_block_delta (text_delta, input_json_delta) / content_block_stop, message_delta with the
 * stop reason and output usage, message_stop). Errors use `{type:"error", error:{type, message}}` and every
 * answer carries a `request-id` header.
 */
export function startFakeAnthropic(options?: FakeServerOptions): Promise<FakeVendorServer> {
  return startFakeVendorServer(anthropicProtocol, options);
}

const STOP_REASONS = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
} as const;

const anthropicProtocol: VendorProtocol = {
  basePath: '/v1',
  requestIdHeader: 'request-id',
  openingEvents: 1,
  isStream: (_path, rawBody) => rawBody.includes('"stream":true'),
  reply(request, step, ids) {
    if (request.method !== 'POST' || request.path !== '/v1/messages') return undefined;
    return request.stream
      ? { kind: 'sse', events: messageStream(request, step, ids) }
      : { kind: 'json', body: message(request, step, ids) };
  },
  streamErrorEvent: () => ({
    event: 'error',
    data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
  }),
  errorBody(status, message) {
    const [type, defaultMessage] = anthropicError(status);
    return { type: 'error', error: { type, message: message ?? defaultMessage } };
  },
};

function anthropicError(status: number): [string, string] {
  switch (status) {
    case 400:
    case 422:
      return ['invalid_request_error', 'messages: at least one message is required'];
    case 401:
      return ['authentication_error', 'invalid x-api-key'];
    case 403:
      return ['permission_error', 'Your API key does not have permission to use the specified resource.'];
    case 404:
      return ['not_found_error', 'model: not found'];
    case 413:
      return ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'];
    case 429:
      return ['rate_limit_error', 'This request would exceed the rate limit for your organization.'];
    case 529:
      return ['overloaded_error', 'Overloaded'];
    default:
      return ['api_error', 'Internal server error'];
  }
}

function content(step: ResolvedStep, ids: IdSource) {
  const blocks: Array<
    { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown; json: string }
  > = [];
  if (step.text !== undefined) blocks.push({ type: 'text', text: step.text });
  for (const call of step.toolCalls) {
    blocks.push({
      type: 'tool_use',
      id: call.callId ?? ids.next('toolu_'),
      name: call.name,
      input: parseObject(call.arguments),
      json: call.arguments,
    });
  }
  return blocks;
}

function usage(step: ResolvedStep, outputTokens: number) {
  return {
    input_tokens: step.usage.inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: outputTokens,
    service_tier: 'standard',
  };
}

function message(request: RecordedRequest, step: ResolvedStep, ids: IdSource) {
  return {
    id: ids.next('msg_'),
    type: 'message',
    role: 'assistant',
    model: String(request.body?.model ?? 'claude-sonnet-4-5'),
    content: content(step, ids).map((block) =>
      block.type === 'text' ? block : { type: 'tool_use', id: block.id, name: block.name, input: block.input },
    ),
    stop_reason: STOP_REASONS[step.finishReason],
    stop_sequence: null,
    usage: usage(step, step.usage.outputTokens),
  };
}

function messageStream(request: RecordedRequest, step: ResolvedStep, ids: IdSource): SseEvent[] {
  const events: SseEvent[] = [];
  const push = (type: string, payload: Record<string, unknown>, textDelta = false) => {
    events.push({ event: type, data: JSON.stringify({ type, ...payload }), textDelta });
  };
  push('message_start', {
    message: {
      id: ids.next('msg_'),
      type: 'message',
      role: 'assistant',
      model: String(request.body?.model ?? 'claude-sonnet-4-5'),
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usage(step, 1),
    },
  });
  content(step, ids).forEach((block, index) => {
    if (block.type === 'text') {
      push('content_block_start', { index, content_block: { type: 'text', text: '' } });
      if (index === 0) push('ping', {});
      for (const text of step.textChunks)
        push('content_block_delta', { index, delta: { type: 'text_delta', text } }, true);
    } else {
      push('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      push('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
      for (const partial of splitInTwo(block.json)) {
        push('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: partial } });
      }
    }
    push('content_block_stop', { index });
  });
  push('message_delta', {
    delta: { stop_reason: STOP_REASONS[step.finishReason], stop_sequence: null },
    usage: { output_tokens: step.usage.outputTokens },
  });
  push('message_stop', {});
  return events;
}

function parseObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
