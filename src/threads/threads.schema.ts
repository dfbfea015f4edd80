import { z } from 'zod';
import { metadataSchema } from '../http/validation';

/** Spec: at most this many messages at thread creation and in one bulk create (api-decisions 5). */
export const MAX_MESSAGES_PER_REQUEST = 100;

const textPartSchema = z.strictObject({
  type: z.literal('text', { error: "content parts must be {type: 'text', text}" }),
  text: z.string(),
});

/** A string, or a non-empty array of text parts; stored as the array form (messageInputToNew). */
const contentSchema = z.union([z.string(), z.array(textPartSchema).min(1, 'content must hold at least one part')], {
  error: "content must be a string or a non-empty array of {type: 'text', text} parts",
});

/** A message as a client sends it (spec: Legacy endpoints, `{role, content}`; metadata as api-decisions 18). */
export const messageInputSchema = z.strictObject({
  role: z.enum(['user', 'assistant'], { error: "role must be 'user' or 'assistant'" }),
  content: contentSchema,
  metadata: metadataSchema.optional(),
});
export type MessageInput = z.infer<typeof messageInputSchema>;

const messagesSchema = z
  .array(messageInputSchema)
  .max(MAX_MESSAGES_PER_REQUEST, `messages holds at most ${MAX_MESSAGES_PER_REQUEST} entries`);

export const createThreadSchema = z.strictObject({
  metadata: metadataSchema.optional(),
  messages: messagesSchema.optional(),
});

export const updateThreadSchema = z.strictObject({
  metadata: metadataSchema,
});

export const createMessageSchema = messageInputSchema;

export const updateMessageSchema = z.strictObject({
  metadata: metadataSchema,
});

export const bulkCreateMessagesSchema = z.strictObject({
  messages: messagesSchema.min(1, 'messages must hold at least one entry'),
});

export const bulkDeleteMessagesSchema = z.strictObject({
  message_ids: z
    .array(z.string().min(1).max(128))
    .min(1, 'message_ids must hold at least one id')
    .max(MAX_MESSAGES_PER_REQUEST, `message_ids holds at most ${MAX_MESSAGES_PER_REQUEST} ids`)
    .refine((ids) => new Set(ids).size === ids.length, 'message_ids must not repeat an id'),
});
