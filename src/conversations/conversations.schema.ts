import { z } from 'zod';
import { metadataSchema } from '../http/validation';

export const MESSAGE_ROLES = ['user', 'assistant', 'system', 'developer'] as const;

const messageItemSchema = z.strictObject({
  type: z.literal('message'),
  role: z.enum(MESSAGE_ROLES),
  content: z.string(),
});

const functionCallItemSchema = z.strictObject({
  type: z.literal('function_call'),
  call_id: z.string().min(1).max(512),
  name: z.string().min(1).max(256),
  // Accepted so a client can rebuild a tool-calling history; vendors need the arguments to be JSON.
  arguments: z.string().refine(isJson, 'must be a string holding JSON'),
});

const functionCallOutputItemSchema = z.strictObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1).max(512),
  output: z.string(),
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
  items: z.array(inputItemSchema).max(MAX_ITEMS_PER_REQUEST, `items holds at most ${MAX_ITEMS_PER_REQUEST} entries`).optional(),
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
