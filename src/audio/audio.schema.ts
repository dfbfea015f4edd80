import { z } from 'zod';
import { invalidRequest } from '../errors';
import { findUnstorable, unstorableText } from '../http/json-limits';
import { describeIssues, parseInput } from '../http/validation';
import type { SpeechFormat } from '../providers/provider';

/** POST /v2/audio/speech (spec "Audio"). The text's limit and the voice are the model's (checked against the catalog). */
export const speechBodySchema = z.strictObject({
  model: z.string().min(1, 'model is required'),
  voice: z.string().min(1, 'voice is required'),
  text: z.string().refine((text) => text.trim() !== '', 'text must not be empty'),
});

export type SpeechBody = z.infer<typeof speechBodySchema>;

/** A speech request from either surface: /v2's body, or OpenAI's with its format and speed (absent: MP3 at speed 1). */
export type SpeechOrder = SpeechBody & { format?: SpeechFormat; speed?: number };

export const parseSpeechBody = (body: unknown): SpeechBody => parseInput(speechBodySchema, body ?? {}, 'audio');

const MAX_META_BYTES = 16 * 1024;

/** A transcription's language and prompt, on both surfaces. */
export const languageField = z
  .string()
  .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, 'language must be a language code such as "en" or "pt-BR"')
  .optional();
export const promptField = z.string().max(4096, 'prompt is at most 4096 characters').optional();

/** The text fields of POST /v2/audio/transcription (multipart values are strings; numbers and `meta` are parsed). */
export const transcriptionFieldsSchema = z.strictObject({
  model: z.string().min(1, 'model is required'),
  language: languageField,
  prompt: promptField,
  beam_size: z
    .string()
    .regex(/^\d+$/, 'beam_size must be an integer')
    .transform(Number)
    .pipe(z.number().int().min(1, 'beam_size is 1-10').max(10, 'beam_size is 1-10'))
    .optional(),
  source: z.string().max(64, 'source is at most 64 characters').optional(),
  callback_url: z.string().min(1).optional(),
  meta: z
    .string()
    .max(MAX_META_BYTES, `meta is at most ${MAX_META_BYTES} bytes of JSON`)
    .transform((text, ctx) => {
      try {
        const value: unknown = JSON.parse(text);
        if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
          const unstorable = findUnstorable(value);
          if (!unstorable) return value as Record<string, unknown>;
          ctx.addIssue({
            code: 'custom',
            message: `meta must not contain NUL characters or unpaired surrogates (found at ${unstorable.path})`,
          });
          return z.NEVER;
        }
      } catch {
        // reported below
      }
      ctx.addIssue({ code: 'custom', message: 'meta must be a JSON object' });
      return z.NEVER;
    })
    .optional(),
});

export type TranscriptionFields = z.output<typeof transcriptionFieldsSchema>;

/** A transcription request from either surface: /v2's fields, or OpenAI's with its sampling temperature. */
export type TranscriptionOrder = TranscriptionFields & { temperature?: number };

/**
 * A form's fields, checked before anything is written: one the database would refuse (NUL) is a 400 here, not a
 * failed write after the billing hold is placed.
 */
export function parseFormFields<S extends z.ZodType>(schema: S, fields: Record<string, string>): z.output<S> {
  const unstorable = Object.keys(fields).filter((name) => unstorableText(fields[name]!) || unstorableText(name));
  if (unstorable.length > 0)
    throw invalidRequest(
      'transcription',
      `${unstorable.join(', ')} must not contain NUL characters or unpaired surrogates.`,
    );
  const result = schema.safeParse(fields);
  if (!result.success) throw invalidRequest('transcription', describeIssues(result.error));
  return result.data;
}

export const parseTranscriptionFields = (fields: Record<string, string>): TranscriptionFields =>
  parseFormFields(transcriptionFieldsSchema, fields);
