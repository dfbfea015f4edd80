import { z } from 'zod';
import { invalidRequest, type ErrorArea } from '../errors';
import { refusalOf } from './json-limits';

/** Formats zod issues as one readable sentence: "items[3].content: expected string, received number". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const where = issue.path.reduce<string>(
        (text, key) => (typeof key === 'number' ? `${text}[${key}]` : text ? `${text}.${String(key)}` : String(key)),
        '',
      );
      return where ? `${where}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/**
 * Validates untrusted input against a schema; a failure, or a body the body reader refused (too deep,
 * unstorable text), is a 400 `<area>.invalid_request`.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, area: ErrorArea): z.output<S> {
  const refusal = refusalOf(value);
  if (refusal) throw invalidRequest(area, refusal);
  const result = schema.safeParse(value);
  if (!result.success) throw invalidRequest(area, describeIssues(result.error));
  return result.data;
}

/**
 * An optional field that may also be sent as `null` (OpenAI's reference allows null for most optional fields, and
 * its clients send it): null means the same as absent.
 */
export const nullable = <S extends z.ZodType>(schema: S) =>
  schema
    .nullish()
    .transform((value): z.output<S> | undefined => value ?? undefined)
    .optional();

/** Metadata rules (api-decisions 18): at most 16 pairs, keys ≤ 64 characters, string values ≤ 512 characters. */
export const metadataSchema = z
  .record(
    z.string().min(1).max(64, 'metadata keys are at most 64 characters'),
    z.string().max(512, 'metadata values are at most 512 characters'),
  )
  .refine((value) => Object.keys(value).length <= 16, 'metadata holds at most 16 pairs');

/** Query-string integer with bounds and a default. */
export const queryInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/, 'must be an integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
