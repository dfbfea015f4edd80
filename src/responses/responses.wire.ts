import type { StreamEvent } from '../events/stream-event';
import { DEFAULT_TEMPERATURE, type InputItem, type OutputItem, type ResponseUsage } from './response-types';
import type { ResponseRow } from './responses.table';
import { toUnixSeconds } from '../time';

/**
 * A text part as OpenAI's reference has it: `annotations` and `logprobs` are required arrays (its clients map
 * over them). None is produced here, so both are empty; a part that has them keeps its own.
 */
export const outputTextToWire = <Part extends { type: 'output_text'; text: string }>(part: Part) => ({
  annotations: [] as never[],
  logprobs: [] as never[],
  ...part,
});

/** An output item on the wire: a message's text parts completed as above, the other items as stored. */
export const outputItemToWire = (item: OutputItem) =>
  item.type === 'message' ? { ...item, content: item.content.map(outputTextToWire) } : item;

/** Usage with the token details OpenAI's reference requires (nothing is cached or reasoned about separately here). */
export const usageToWire = (usage: ResponseUsage) => ({
  ...usage,
  input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
  output_tokens_details: { reasoning_tokens: 0 },
});

/**
 * A failed Response's `error`: the spec's `{code, message}` (api-decisions 13) with OpenAI's `type` and `param`. The
 * Vercel AI SDK's parser of a Response requires `type` (a string) beside `message` and `code`: without it a failed
 * Response reached its users as "Invalid JSON response" instead of our message.
 */
export const responseErrorToWire = (error: { code: string; message: string }) => ({
  code: error.code,
  message: error.message,
  type: responseErrorType(error.code),
  param: null,
});

/** OpenAI's error `type` for a failure's `area.reason` code (as its HTTP errors have it: http/error-middleware.ts). */
function responseErrorType(code: string): string {
  const reason = code.slice(code.indexOf('.') + 1);
  if (reason === 'execution_failed' || reason === 'interrupted') return 'server_error';
  if (reason === 'payment_required') return 'insufficient_quota';
  if (reason === 'rate_limited') return 'rate_limit_error';
  return 'invalid_request_error';
}

/** The Response object of the spec. Output is empty while queued and after cancellation. */
export function responseToWire(row: ResponseRow) {
  return {
    id: row.id,
    object: 'response' as const,
    created_at: toUnixSeconds(row.created_at),
    status: row.status,
    background: row.background,
    model: row.model,
    output: row.output.map(outputItemToWire),
    ...(row.conversation_id ? { conversation: { id: row.conversation_id } } : {}),
    ...(row.previous_response_id ? { previous_response_id: row.previous_response_id } : {}),
    ...(row.assistant_id !== null ? { assistant_id: row.assistant_id } : {}),
    instructions: row.request.instructions,
    // The values in effect (api-decisions 16): the temperature sent (the spec's default when left open), top_p
    // when one was set (else each vendor's own), and the output cap the hold was placed for: the model's limit
    // from the catalog (null only on Responses from before holds).
    temperature: row.request.temperature ?? DEFAULT_TEMPERATURE,
    top_p: row.request.top_p,
    max_output_tokens: row.request.max_output_tokens ?? row.request.hold?.output_tokens ?? null,
    parallel_tool_calls: row.request.parallel_tool_calls,
    tool_choice: row.request.tool_choice ?? 'auto',
    // OpenAI's function tool has `parameters` and `strict` always (null when not given).
    tools: row.request.tools.map((tool) =>
      tool.type === 'mcp'
        ? { ...tool, authorization: undefined, headers: undefined }
        : { ...tool, parameters: tool.parameters ?? null, strict: tool.strict ?? null },
    ),
    truncation: row.request.truncation,
    ...(row.request.text_format ? { text: { format: row.request.text_format } } : {}),
    metadata: row.metadata,
    usage: row.usage ? usageToWire(row.usage) : null,
    error: row.error ? responseErrorToWire(row.error) : null,
    incomplete_details: row.incomplete_details,
    completed_at: row.completed_at ? toUnixSeconds(row.completed_at) : null,
  };
}

/** An input item as OpenAI's input items list shows it: a message's text as one part. */
export function inputItemToWire({ id, item }: { id: string; item: InputItem }) {
  switch (item.type) {
    case 'message':
      return {
        id,
        type: 'message' as const,
        role: item.role,
        status: 'completed' as const,
        content: [
          item.role === 'assistant'
            ? outputTextToWire({ type: 'output_text' as const, text: item.content })
            : { type: 'input_text' as const, text: item.content },
        ],
      };
    case 'function_call':
      return {
        id,
        type: 'function_call' as const,
        status: 'completed' as const,
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
      };
    case 'function_call_output':
      return {
        id,
        type: 'function_call_output' as const,
        status: 'completed' as const,
        call_id: item.call_id,
        output: item.output,
      };
  }
}

export type ResponseWire = ReturnType<typeof responseToWire>;

/**
 * A Response object as stored in its final event, with the fields above (an event stored before they were added
 * lacks them; completing one that has them changes nothing).
 */
export function storedResponseToWire(response: ResponseWire): ResponseWire {
  return {
    ...response,
    output: response.output.map((item) => outputItemToWire(item as OutputItem)),
    usage: response.usage && usageToWire(response.usage),
    error: response.error && responseErrorToWire(response.error),
  };
}

/**
 * A stored stream event on the wire, with the fields OpenAI's reference requires: items and text parts as above,
 * `logprobs` on the text events, the final event's Response completed.
 */
export function streamEventToWire(event: StreamEvent): StreamEvent {
  const wire = { ...event };
  if (event.type === 'response.output_text.delta' || event.type === 'response.output_text.done') wire.logprobs ??= [];
  if (isTyped(event.item)) wire.item = outputItemToWire(event.item as OutputItem);
  if (isTyped(event.part) && event.part.type === 'output_text')
    wire.part = outputTextToWire(event.part as { type: 'output_text'; text: string });
  const response = event.response as ResponseWire | undefined;
  if (Array.isArray(response?.output)) wire.response = storedResponseToWire(response);
  return wire;
}

const isTyped = (value: unknown): value is { type: string } =>
  typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
