import { z } from 'zod';

/**
 * Legacy POST /v2/chat/completions (spec table; api-decisions 8) and v1 POST /v1/chat/completions.
 * Messages are `{role, content}` with string content, as the spec shows them.
 */
const messageSchema = z.strictObject({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});

const toolNameSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'tool names are 1-64 letters, digits, _ or -');
const parametersSchema = z.record(z.string(), z.unknown());

const functionToolFlatSchema = z.strictObject({
  type: z.literal('function'),
  name: toolNameSchema,
  description: z.string().max(1024).optional(),
  parameters: parametersSchema.optional(),
});

const functionToolNestedSchema = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: toolNameSchema,
    description: z.string().max(1024).optional(),
    parameters: parametersSchema.optional(),
  }),
});

/**
 * The spec lists file search and code interpreter among the tools this endpoint takes (its shapes are not shown:
 * these are OpenAI's Responses API tools). Vendors that run them get them; for a model of any other vendor the
 * service answers a 400 naming the vendor (api-decisions 8).
 */
const fileSearchToolSchema = z.strictObject({
  type: z.literal('file_search'),
  /** The vendor's stores: OpenAI's vector store ids, Gemini's file search store names (`fileSearchStores/...`). */
  vector_store_ids: z.array(z.string().min(1).max(256)).min(1, 'vector_store_ids must name at least one store').max(16),
  max_num_results: z.number().int().min(1).max(50).optional(),
});

const codeInterpreterToolSchema = z.strictObject({
  type: z.literal('code_interpreter'),
  /** OpenAI's container: an existing one's id, or a new one (`{type: "auto", file_ids}`), the default. */
  container: z
    .union([
      z.string().min(1).max(256),
      z.strictObject({ type: z.literal('auto'), file_ids: z.array(z.string().min(1).max(256)).max(100).optional() }),
    ])
    .optional(),
});

const serverToolSchema = z.union([fileSearchToolSchema, codeInterpreterToolSchema]);

type FunctionToolFlat = z.infer<typeof functionToolFlatSchema>;
type FunctionToolNested = z.infer<typeof functionToolNestedSchema>;
type ServerTool = z.infer<typeof serverToolSchema>;

/**
 * Picks the form by its shape before validating, so a bad tool gets the precise complaint of the form it
 * was meant to be ("tools[0].function.name: ...") rather than a union's bare "Invalid input".
 */
const toolSchema = z
  .looseObject({ type: z.enum(['function', 'file_search', 'code_interpreter']) })
  .transform((tool, ctx): FunctionToolFlat | FunctionToolNested | ServerTool => {
    const schema =
      tool.type === 'file_search'
        ? fileSearchToolSchema
        : tool.type === 'code_interpreter'
          ? codeInterpreterToolSchema
          : 'function' in tool
            ? functionToolNestedSchema
            : functionToolFlatSchema;
    const result = schema.safeParse(tool);
    if (result.success) return result.data;
    for (const issue of result.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    return z.NEVER;
  });

export const legacyChatBodySchema = z.strictObject({
  model: z.string().min(1, 'model is required'),
  messages: z.array(messageSchema).min(1, 'messages must hold at least one message').max(10_000),
  instructions: z.string().max(256_000).optional(),
  max_tokens: z.number().int().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
  tools: z.array(toolSchema).max(128).optional(),
});

export const v1ChatBodySchema = z.strictObject({
  model: z.string().min(1, 'model is required'),
  messages: z.array(messageSchema).min(1, 'messages must hold at least one message').max(10_000),
});

export type LegacyChatBody = z.infer<typeof legacyChatBodySchema>;
export type ChatTool = z.infer<typeof toolSchema>;
export type ChatMessage = z.infer<typeof messageSchema>;
