import { z } from 'zod';
import { echoedItemFields, functionCallItemSchema, messageContentSchema } from '../conversations/conversations.schema';
import { metadataSchema, nullable, queryInteger } from '../http/validation';

/**
 * POST /v2/responses body (spec: Responses create body; api-decisions 14-19), with OpenAI's input forms as a
 * superset: content as text parts, and the output items of an earlier Response sent back (their `id` and
 * `status` accepted and dropped), so `input: [...previous.output, {type: 'function_call_output', ...}]` works.
 */
const messageInput = z.strictObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: messageContentSchema,
  ...echoedItemFields,
});
const functionCallOutputInput = z.strictObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1).max(256),
  output: z.string(),
  ...echoedItemFields,
});

/** The name of a structured output format (OpenAI's rule), in `text.format` and chat's `response_format`. */
export const formatNameSchema = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'the format name is 1-64 letters, digits, _ or -');

/** OpenAI's `text.format`: plain text, any JSON object, or JSON matching a schema (structured output). */
export const textFormatSchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('text') }),
    z.strictObject({ type: z.literal('json_object') }),
    z.strictObject({
      type: z.literal('json_schema'),
      name: formatNameSchema,
      schema: z.record(z.string(), z.unknown()),
      description: nullable(z.string().max(4096)),
      strict: z.boolean().nullable().optional(),
    }),
  ],
  { error: 'text.format.type must be text, json_object or json_schema' },
);
export type TextFormat = z.infer<typeof textFormatSchema>;

export const functionToolSchema = z.strictObject({
  type: z.literal('function'),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'function names are 1-64 letters, digits, _ or -'),
  description: nullable(z.string().max(4096)),
  parameters: nullable(z.record(z.string(), z.unknown())),
  strict: nullable(z.boolean()),
});

export const mcpToolSchema = z.strictObject({
  type: z.literal('mcp'),
  server_label: z.string().min(1).max(128),
  server_url: z.string().min(1).max(2048),
  authorization: z.string().max(8192).optional(),
  allowed_tools: z.array(z.string().min(1).max(128)).max(128).optional(),
  // Only `never` is supported: checked by the service, which answers in the mcp area.
  require_approval: z.string().max(64),
  headers: z.record(z.string(), z.string()).optional(),
});

const toolChoiceSchema = z.union([
  z.enum(['auto', 'none', 'required']),
  z.strictObject({ type: z.literal('function'), name: z.string().min(1) }),
  z.strictObject({ type: z.literal('mcp'), server_label: z.string().min(1), name: z.string().optional() }),
]);

const reasoningEffort = z.enum(['minimal', 'low', 'medium', 'high']);
const verbosity = z.enum(['low', 'medium', 'high']);

/** OpenAI's `include` values: accepted, and none adds anything here (no tool of theirs runs in this service). */
const OPENAI_INCLUDE_VALUES = [
  'code_interpreter_call.outputs',
  'computer_call_output.output.image_url',
  'file_search_call.results',
  'message.input_image.image_url',
  'message.output_text.logprobs',
  'reasoning.encrypted_content',
  'web_search_call.action.sources',
] as const;

export const createResponseSchema = z
  .strictObject({
    input: z.union(
      [
        z.string(),
        z
          .array(z.union([functionCallOutputInput, functionCallItemSchema, messageInput]))
          .min(1, 'input needs at least one item'),
      ],
      {
        error: 'input must be a string or an array of items',
      },
    ),
    model: z.string().min(1).optional(),
    assistant_id: z.number().int().positive().optional(),
    conversation: nullable(z.union([z.string().min(1), z.strictObject({ id: z.string().min(1) })])),
    previous_response_id: nullable(z.string().min(1)),
    instructions: nullable(z.string().max(256_000)),
    temperature: nullable(z.number().min(0).max(2)),
    top_p: nullable(z.number().min(0).max(1)),
    reasoning_effort: nullable(reasoningEffort),
    verbosity: verbosity.optional(),
    parallel_tool_calls: nullable(z.boolean()),
    message_limit: z.number().int().min(0).max(100_000).optional(),
    truncation: nullable(z.enum(['auto', 'disabled'])),
    background: nullable(z.boolean()),
    stream: nullable(z.boolean()),
    tools: z
      .array(
        z.discriminatedUnion('type', [functionToolSchema, mcpToolSchema], {
          error: 'tools must be function or mcp tools',
        }),
      )
      .max(128)
      .optional(),
    tool_choice: nullable(toolChoiceSchema),
    max_output_tokens: nullable(z.number().int().positive()),
    metadata: nullable(metadataSchema),
    // OpenAI's spellings and fields its SDK and users send routinely (README, "OpenAI SDK").
    reasoning: nullable(z.strictObject({ effort: nullable(reasoningEffort) })),
    text: nullable(
      z.strictObject({
        verbosity: nullable(verbosity),
        format: nullable(textFormatSchema),
      }),
    ),
    store: nullable(z.boolean()),
    include: nullable(z.array(z.enum(OPENAI_INCLUDE_VALUES)).max(16)),
    user: nullable(z.string().max(256)),
    stream_options: nullable(z.strictObject({ include_obfuscation: nullable(z.boolean()) })),
  })
  .superRefine((body, ctx) => {
    if (body.stream_options !== undefined && body.stream !== true) {
      ctx.addIssue({
        code: 'custom',
        path: ['stream_options'],
        message: 'stream_options is only allowed with stream: true',
      });
    }
    if (body.store === false) {
      ctx.addIssue({
        code: 'custom',
        path: ['store'],
        message: 'store: false is not supported: every Response is stored (delete it with DELETE /v2/responses/{id})',
      });
    }
    if (
      body.reasoning?.effort !== undefined &&
      body.reasoning_effort !== undefined &&
      body.reasoning.effort !== body.reasoning_effort
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['reasoning', 'effort'],
        message: 'reasoning.effort and reasoning_effort disagree; send one',
      });
    }
    if (body.text?.verbosity !== undefined && body.verbosity !== undefined && body.text.verbosity !== body.verbosity) {
      ctx.addIssue({
        code: 'custom',
        path: ['text', 'verbosity'],
        message: 'text.verbosity and verbosity disagree; send one',
      });
    }
    if (body.model === undefined && body.assistant_id === undefined) {
      ctx.addIssue({ code: 'custom', message: 'model or assistant_id is required' });
    }
    if (body.previous_response_id !== undefined && body.conversation !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['previous_response_id'],
        message: 'previous_response_id cannot be combined with conversation',
      });
    }
    const names = (body.tools ?? []).filter((tool) => tool.type === 'function').map((tool) => tool.name);
    if (new Set(names).size !== names.length)
      ctx.addIssue({ code: 'custom', path: ['tools'], message: 'function names must be unique' });
  });

export type CreateResponseBody = z.infer<typeof createResponseSchema>;

/**
 * The spec's rule, on /v2 only: a stream is of a synchronous Response. On /openai/v1 a background Response may be
 * streamed as well, as on OpenAI (its events are stored either way, so it is resumable with `starting_after`).
 */
export const streamsOnlySynchronous = (body: { stream?: boolean; background?: boolean }, ctx: z.RefinementCtx) => {
  if (body.stream && body.background !== false)
    ctx.addIssue({ code: 'custom', path: ['stream'], message: 'stream: true requires background: false' });
};

/** The body with OpenAI's spellings folded into the spec's (`reasoning.effort`, `text.verbosity`); `text` keeps only its format. */
export function canonicalResponseBody(body: CreateResponseBody): CreateResponseBody {
  const { reasoning, text, ...rest } = body;
  return {
    ...rest,
    reasoning_effort: body.reasoning_effort ?? reasoning?.effort,
    verbosity: body.verbosity ?? text?.verbosity,
    ...(text?.format ? { text: { format: text.format } } : {}),
  };
}

export const getResponseQuerySchema = z.strictObject({
  stream: z.enum(['true', 'false']).optional(),
  // Sequence numbers are stored as 32-bit integers (any negative value means "from the first event").
  starting_after: queryInteger(-2_147_483_648, 2_147_483_647).optional(),
});
