import { z } from 'zod';
import { metadataSchema, queryInteger } from '../http/validation';

/** Assistant ids are Postgres `integer` identities (spec: "id is an integer"). */
export const MAX_ASSISTANT_ID = 2_147_483_647;

const functionToolSchema = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    // The rule the vendors share (OpenAI, Anthropic, Gemini): a name they all accept.
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'function names are 1-64 characters: letters, digits, _ and -'),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

/** Spec: "tools: array of function, file_search, code_interpreter tools"; function tools in the nested form. */
export const assistantToolSchema = z.discriminatedUnion(
  'type',
  [
    functionToolSchema,
    z.strictObject({ type: z.literal('file_search') }),
    z.strictObject({ type: z.literal('code_interpreter') }),
  ],
  { error: 'tool type must be one of function, file_search, code_interpreter' },
);
export type AssistantTool = z.infer<typeof assistantToolSchema>;

/** An Assistant's tools; also a Run's, which may replace them for that Run. */
export const assistantToolsSchema = z
  .array(assistantToolSchema)
  .max(128, 'tools holds at most 128 entries')
  .refine((tools) => uniqueFunctionNames(tools), 'function tool names must be unique');

/**
 * Create body; also the update body, since update is a full replacement (spec: "all fields required …
 * including model and name"): optional fields left out are reset. `null` means the same as leaving a field out.
 */
export const assistantBodySchema = z.strictObject({
  model: z.string().min(1, 'model is required').max(256),
  name: z.string().min(1, 'name must be 1-256 characters').max(256, 'name must be 1-256 characters'),
  description: z.string().max(512, 'description is at most 512 characters').nullish(),
  instructions: z.string().max(256_000, 'instructions are at most 256000 characters').nullish(),
  reasoning_effort: z
    .enum(['low', 'medium', 'high'], { error: "reasoning_effort must be 'low', 'medium' or 'high'" })
    .nullish(),
  temperature: z.number().min(0, 'temperature is 0-2').max(2, 'temperature is 0-2').nullish(),
  tools: assistantToolsSchema.nullish(),
  tool_resources: z.record(z.string(), z.unknown()).nullish(),
  metadata: metadataSchema.nullish(),
});

export type AssistantBody = z.infer<typeof assistantBodySchema>;

export const listAssistantsQuerySchema = z
  .strictObject({
    limit: queryInteger(1, 100).optional(),
    order: z.enum(['asc', 'desc'], { error: "order must be 'asc' or 'desc'" }).optional(),
    after: queryInteger(1, MAX_ASSISTANT_ID).optional(),
    before: queryInteger(1, MAX_ASSISTANT_ID).optional(),
  })
  .refine(
    (query) => query.after === undefined || query.before === undefined,
    'after and before cannot be used together',
  );

export type ListAssistantsQuery = z.infer<typeof listAssistantsQuerySchema>;

function uniqueFunctionNames(tools: AssistantTool[]): boolean {
  const names = tools.flatMap((tool) => (tool.type === 'function' ? [tool.function.name] : []));
  return new Set(names).size === names.length;
}
