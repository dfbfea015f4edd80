import { z } from 'zod';
import type { ChatCompletion, ChatRequest, ChatStreamPart } from '../chat/chat.service';
import type { PromptItem, ResponseFormat } from '../providers/provider';
import { nullable } from '../http/validation';
import { formatNameSchema } from '../responses/responses.schema';

/**
 * OpenAI's chat completions request (the fields this service can honour) and reply, mapped onto the chat
 * service. Unknown fields are a 400 naming them; `n` other than 1 and non-text content parts are refused.
 */
const textContent = z.union([z.string(), z.array(z.strictObject({ type: z.literal('text'), text: z.string() }))], {
  error: 'content must be a string or an array of text parts (images and audio are not supported)',
});

const toolCall = z.strictObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('system'), content: textContent, name: nullable(z.string()) }),
  z.strictObject({ role: z.literal('developer'), content: textContent, name: nullable(z.string()) }),
  z.strictObject({ role: z.literal('user'), content: textContent, name: nullable(z.string()) }),
  z.strictObject({
    role: z.literal('assistant'),
    content: textContent.nullable().optional(),
    name: nullable(z.string()),
    tool_calls: nullable(z.array(toolCall)),
    refusal: z.string().nullable().optional(),
  }),
  // LangChain sends the tool's `name` with its answer (OpenAI's older function messages had it); it is not needed.
  z.strictObject({
    role: z.literal('tool'),
    content: textContent,
    tool_call_id: z.string().min(1),
    name: nullable(z.string()),
  }),
]);

const tool = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'tool names are 1-64 letters, digits, _ or -'),
    description: nullable(z.string().max(4096)),
    parameters: nullable(z.record(z.string(), z.unknown())),
    strict: z.boolean().nullable().optional(),
  }),
});

export const openAIChatBody = z
  .strictObject({
    model: z.string().min(1, 'model is required'),
    messages: z.array(message).min(1, 'messages must hold at least one message').max(10_000),
    tools: nullable(z.array(tool).max(128)),
    tool_choice: nullable(
      z.union([
        z.enum(['auto', 'none', 'required']),
        z.strictObject({ type: z.literal('function'), function: z.strictObject({ name: z.string().min(1) }) }),
      ]),
    ),
    parallel_tool_calls: nullable(z.boolean()),
    max_tokens: nullable(z.number().int().min(1)),
    max_completion_tokens: nullable(z.number().int().min(1)),
    temperature: nullable(z.number().min(0).max(2)),
    top_p: nullable(z.number().min(0).max(1)),
    n: nullable(z.literal(1, { error: 'n must be 1: one choice per request' })),
    stream: nullable(z.boolean()),
    stream_options: nullable(
      z.strictObject({ include_usage: nullable(z.boolean()), include_obfuscation: nullable(z.boolean()) }),
    ),
    user: nullable(z.string().max(256)),
    store: nullable(z.boolean()),
    response_format: z
      .discriminatedUnion(
        'type',
        [
          z.strictObject({ type: z.literal('text') }),
          z.strictObject({ type: z.literal('json_object') }),
          z.strictObject({
            type: z.literal('json_schema'),
            json_schema: z.strictObject({
              name: formatNameSchema,
              schema: z.record(z.string(), z.unknown()).optional(),
              description: nullable(z.string().max(4096)),
              strict: z.boolean().nullable().optional(),
            }),
          }),
        ],
        { error: 'response_format.type must be text, json_object or json_schema' },
      )
      .nullish(),
  })
  .superRefine((body, ctx) => {
    if (body.stream_options && !body.stream)
      ctx.addIssue({
        code: 'custom',
        path: ['stream_options'],
        message: 'stream_options is only allowed with stream: true',
      });
    if (
      body.max_tokens !== undefined &&
      body.max_completion_tokens !== undefined &&
      body.max_tokens !== body.max_completion_tokens
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['max_completion_tokens'],
        message: 'max_tokens and max_completion_tokens disagree; send one',
      });
    }
  });

export type OpenAIChatBody = z.infer<typeof openAIChatBody>;

const text = (content: z.infer<typeof textContent> | null | undefined) =>
  typeof content === 'string' ? content : (content ?? []).map((part) => part.text).join('');

/** The chat service's request for an OpenAI body: messages as the port's items (tool calls and results included). */
export function toChatRequest(body: OpenAIChatBody): ChatRequest {
  const items: PromptItem[] = [];
  for (const entry of body.messages) {
    if (entry.role === 'tool')
      items.push({ type: 'function_call_output', callId: entry.tool_call_id, output: text(entry.content) });
    else if (entry.role === 'assistant') {
      const said = text(entry.content);
      if (said) items.push({ type: 'message', role: 'assistant', text: said });
      for (const call of entry.tool_calls ?? [])
        items.push({
          type: 'function_call',
          callId: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        });
    } else items.push({ type: 'message', role: entry.role === 'user' ? 'user' : 'system', text: text(entry.content) });
  }
  const choice = body.tool_choice;
  return {
    model: body.model,
    messages: [],
    items,
    maxTokens: body.max_completion_tokens ?? body.max_tokens,
    temperature: body.temperature,
    topP: body.top_p,
    tools: body.tools?.map((entry) => ({
      type: 'function' as const,
      function: {
        name: entry.function.name,
        description: entry.function.description,
        parameters: entry.function.parameters,
      },
    })),
    toolChoice: typeof choice === 'object' ? { type: 'function', name: choice.function.name } : choice,
    parallelToolCalls: body.parallel_tool_calls,
    responseFormat: toResponseFormat(body.response_format),
  };
}

function toResponseFormat(format: OpenAIChatBody['response_format']): ResponseFormat | undefined {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json' };
  const { name, schema, description, strict } = format.json_schema;
  return { type: 'json', name, schema, description, strict: strict ?? undefined };
}

/** OpenAI's finish reasons. */
export function finishReason(
  completion: Pick<ChatCompletion, 'finishReason' | 'toolCalls'>,
): 'stop' | 'length' | 'tool_calls' | 'content_filter' {
  if (completion.toolCalls.length > 0 || completion.finishReason === 'tool_calls') return 'tool_calls';
  if (completion.finishReason === 'length') return 'length';
  if (completion.finishReason === 'content_filter') return 'content_filter';
  return 'stop';
}

/** The `chat.completion` object. */
export function chatCompletionToOpenAI(completion: ChatCompletion) {
  return {
    id: `chatcmpl-${completion.requestId}`,
    object: 'chat.completion' as const,
    created: completion.created,
    model: completion.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant' as const,
          content: completion.text || (completion.toolCalls.length > 0 ? null : ''),
          refusal: null,
          ...(completion.toolCalls.length > 0
            ? {
                tool_calls: completion.toolCalls.map((call) => ({
                  id: call.callId,
                  type: 'function' as const,
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: finishReason(completion),
      },
    ],
    usage: usageOf(completion),
  };
}

const usageOf = (completion: ChatCompletion) => ({
  prompt_tokens: completion.inputTokens,
  completion_tokens: completion.outputTokens,
  total_tokens: completion.inputTokens + completion.outputTokens,
  prompt_tokens_details: { cached_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0 },
});

/**
 * A streamed completion as OpenAI's `chat.completion.chunk` objects: the role first, then a chunk per text
 * delta or tool call (each call whole, with its index), then the finish reason; with `include_usage`, every
 * chunk has `usage: null` and a last chunk with no choices carries the usage.
 */
export async function* chatChunks(
  stream: { requestId: string; created: number; model: string; parts: AsyncIterable<ChatStreamPart> },
  includeUsage: boolean,
): AsyncIterable<object> {
  const head = {
    id: `chatcmpl-${stream.requestId}`,
    object: 'chat.completion.chunk' as const,
    created: stream.created,
    model: stream.model,
    system_fingerprint: null,
  };
  const usageSlot = includeUsage ? { usage: null } : {};
  const chunk = (delta: object, finishReason: string | null = null) => ({
    ...head,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...usageSlot,
  });
  yield chunk({ role: 'assistant', content: '', refusal: null });
  let toolIndex = 0;
  for await (const part of stream.parts) {
    if (part.type === 'text-delta') yield chunk({ content: part.text });
    else if (part.type === 'tool-call') {
      const { callId, name, arguments: args } = part.call;
      yield chunk({
        tool_calls: [{ index: toolIndex++, id: callId, type: 'function', function: { name, arguments: args } }],
      });
    } else {
      yield chunk({}, finishReason(part.completion));
      if (includeUsage) yield { ...head, choices: [], usage: usageOf(part.completion) };
    }
  }
}
