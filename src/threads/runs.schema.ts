import { z } from 'zod';
import { assistantToolsSchema, MAX_ASSISTANT_ID } from '../assistants/assistants.schema';
import { metadataSchema } from '../http/validation';
import { MAX_MESSAGES_PER_REQUEST, messageInputSchema } from './threads.schema';

/**
 * A Run (spec: Legacy endpoints; api-decisions 6): the Assistant, plus what the Assistants API let a Run
 * override for itself. Left out, a setting is the Assistant's.
 */
const runFields = {
  assistant_id: z
    .number({ error: 'assistant_id must be an integer' })
    .int('assistant_id must be an integer')
    .min(1)
    .max(MAX_ASSISTANT_ID),
  model: z.string().min(1).max(256).optional(),
  instructions: z.string().max(256_000, 'instructions are at most 256000 characters').nullish(),
  additional_instructions: z.string().max(256_000, 'additional_instructions are at most 256000 characters').nullish(),
  additional_messages: z
    .array(messageInputSchema)
    .max(MAX_MESSAGES_PER_REQUEST, `additional_messages holds at most ${MAX_MESSAGES_PER_REQUEST} entries`)
    .nullish(),
  tools: assistantToolsSchema.nullish(),
  metadata: metadataSchema.optional(),
  temperature: z.number().min(0, 'temperature is 0-2').max(2, 'temperature is 0-2').nullish(),
  top_p: z.number().min(0, 'top_p is 0-1').max(1, 'top_p is 0-1').nullish(),
  max_completion_tokens: z.number().int().min(1).max(10_000_000).nullish(),
  parallel_tool_calls: z.boolean().optional(),
  message_limit: z
    .number()
    .int('message_limit must be an integer')
    .min(1, 'message_limit is at least 1')
    .max(100_000)
    .nullish(),
  // Runs are not streamed over SSE here: read the Run, or its thread's messages, once it ends.
  stream: z.literal(false, { error: 'stream is not supported for Runs; poll the Run instead' }).optional(),
};

export const createRunSchema = z.strictObject(runFields);
export type CreateRunBody = z.infer<typeof createRunSchema>;

/** POST /v2/threads/runs: a thread from `thread.messages` and a Run of it, in one call. */
export const createThreadAndRunSchema = z.strictObject({
  ...runFields,
  thread: z
    .strictObject({
      messages: z
        .array(messageInputSchema)
        .max(MAX_MESSAGES_PER_REQUEST, `thread.messages holds at most ${MAX_MESSAGES_PER_REQUEST} entries`)
        .optional(),
      metadata: metadataSchema.optional(),
    })
    .optional(),
});
export type CreateThreadAndRunBody = z.infer<typeof createThreadAndRunSchema>;

export const updateRunSchema = z.strictObject({ metadata: metadataSchema });

export const submitToolOutputsSchema = z.strictObject({
  tool_outputs: z
    .array(z.strictObject({ tool_call_id: z.string().min(1).max(512), output: z.string() }))
    .min(1, 'tool_outputs must hold at least one entry')
    .max(128, 'tool_outputs holds at most 128 entries')
    .refine(
      (outputs) => new Set(outputs.map((output) => output.tool_call_id)).size === outputs.length,
      'tool_outputs must not repeat a tool_call_id',
    ),
  stream: z.literal(false, { error: 'stream is not supported for Runs; poll the Run instead' }).optional(),
});
