import { z } from 'zod';
import { metadataSchema } from '../http/validation';

export const MESSAGE_ROLES = ['user', 'assistant', 'system', 'developer'] as const;

/**
 * A message's content: the spec's string, or OpenAI's array of text parts (what its SDK sends, and what a
 * Response's output message holds when a client sends it back), joined into the string that is stored.
 */
export const messageContentSchema = z
  .union(
    [
      z.string(),
      z.array(
        z.strictObject({
          type: z.enum(['input_text', 'output_text', 'text']),
          text: z.string(),
          annotations: z.array(z.unknown()).optional(),
          logprobs: z.array(z.unknown()).optional(),
        }),
      ),
    ],
    {
      error:
        'content must be a string or an array of input_text / output_text parts (images, audio and files are not supported)',
    },
  )
  .transform((content) => (typeof content === 'string' ? content : content.map((part) => part.text).join('')));

/** OpenAI's item fields a client echoes back from an output item: accepted, not kept (the stored item gets its own id). */
export const echoedItemFields = {
  id: z.string().max(256).optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).optional(),
};

const messageItemSchema = z.strictObject({
  type: z.literal('message'),
  role: z.enum(MESSAGE_ROLES),
  content: messageContentSchema,
  ...echoedItemFields,
});

/** A function call the model made, sent back to rebuild a tool-calling history; vendors need the arguments to be JSON. */
export const functionCallItemSchema = z.strictObject({
  type: z.literal('function_call'),
  call_id: z.string().min(1).max(512),
  name: z.string().min(1).max(256),
  arguments: z.string().refine(isJson, 'must be a string holding JSON'),
  ...echoedItemFields,
});

const functionCallOutputItemSchema = z.strictObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1).max(512),
  output: z.string(),
  ...echoedItemFields,
});

/** An item as a client sends it (spec: Conversation item, "Items sent in a request"). */
export const inputItemSchema = z.discriminatedUnion(
  'type',
  [messageItemSchema, functionCallItemSchema, functionCallOutputItemSchema],
  { error: 'type must be one of message, function_call, function_call_output' },
);
export type InputItem = z.infer<typeof inputItemSchema>;

/** Spec limit for initial items; the same cap applies to one POST …/items call (as the real service). */
export const MAX_ITEMS_PER_REQUEST = 20;

export const createConversationSchema = z.strictObject({
  metadata: metadataSchema.optional(),
  items: z
    .array(inputItemSchema)
    .max(MAX_ITEMS_PER_REQUEST, `items holds at most ${MAX_ITEMS_PER_REQUEST} entries`)
    .optional(),
});

export const updateConversationSchema = z.strictObject({
  metadata: metadataSchema,
});

export const addItemsSchema = z.strictObject({
  items: z
    .array(inputItemSchema)
    .min(1, 'items must hold at least one entry')
    .max(MAX_ITEMS_PER_REQUEST, `items holds at most ${MAX_ITEMS_PER_REQUEST} entries`),
});

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
