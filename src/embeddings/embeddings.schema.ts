import { z } from 'zod';
import { invalidRequest } from '../errors';
import { parseInput } from '../http/validation';

/** POST /v2/embeddings (spec, Embeddings): exactly one string; arrays are not supported. */
export const embeddingsBodySchema = z.strictObject({
  model: z.string().min(1, 'model is required'),
  input: z.string().min(1, 'input must not be empty'),
  // OpenAI's: `base64` returns the vector as the base64 of its little-endian float32 values (its SDK asks for it).
  encoding_format: z.enum(['float', 'base64']).optional(),
});

/** The vector as the request asked for it: numbers, or the base64 of its little-endian float32 values. */
export function encodeEmbedding(embedding: number[], format: EmbeddingsBody['encoding_format']): number[] | string {
  if (format !== 'base64') return embedding;
  const bytes = Buffer.alloc(embedding.length * 4);
  embedding.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}

export type EmbeddingsBody = z.infer<typeof embeddingsBodySchema>;

/**
 * Parses the body; a non-string `input` gets its own message, because clients coming from other
 * embedding APIs routinely send an array and should learn that this one takes exactly one string.
 */
export function parseEmbeddingsBody(body: unknown): EmbeddingsBody {
  const input = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).input : undefined;
  if (input !== undefined && typeof input !== 'string') {
    throw invalidRequest(
      'embedding',
      `input must be exactly one string; ${Array.isArray(input) ? 'arrays are' : `${kindOf(input)} is`} not supported.`,
    );
  }
  return parseInput(embeddingsBodySchema, body ?? {}, 'embedding');
}

const kindOf = (value: unknown) =>
  value === null ? 'null' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
