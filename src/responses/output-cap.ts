import type { TextStreamPart } from '../providers/provider';

/**
 * Characters one output token is taken to be at most, to tell a vendor that ignores `max_output_tokens` from one
 * that honours it: English averages about four characters a token and other scripts fewer, so a stream past six
 * characters a token of the cap has run past the cap. (No tokenizer here: the vendor's own count comes only at the
 * end of a stream, and a stream that never ends has none.)
 */
export const MAX_CHARS_PER_TOKEN = 6;

/**
 * The parts of a vendor stream, ended at `maxOutputTokens` even when the vendor goes on: the text (and tool-call
 * arguments) past the cap is dropped, a `length` finish is made up with the cap as the output count and
 * `inputTokens` (the caller's estimate) as the input count, and the vendor stream is closed, which aborts its
 * request. A vendor that finishes on its own is passed through as it is.
 */
export async function* capOutput(
  parts: AsyncIterable<TextStreamPart> | Iterable<TextStreamPart>,
  maxOutputTokens: number | undefined,
  inputTokens: () => number,
): AsyncGenerator<TextStreamPart> {
  if (maxOutputTokens === undefined) return yield* parts;
  let left = maxOutputTokens * MAX_CHARS_PER_TOKEN;
  const cut = (): TextStreamPart => ({
    type: 'finish',
    finishReason: 'length',
    usage: { inputTokens: inputTokens(), outputTokens: maxOutputTokens },
  });
  // Leaving this loop early (return) closes the vendor's iterator: its adapter aborts the request.
  for await (const part of parts) {
    if (part.type === 'text-delta') {
      if (part.text.length > left) {
        if (left > 0) yield { type: 'text-delta', text: part.text.slice(0, left) };
        yield cut();
        return;
      }
      left -= part.text.length;
    } else if (part.type === 'tool-call') {
      // A call cannot be cut in two: one past the cap is dropped.
      if (part.arguments.length > left) {
        yield cut();
        return;
      }
      left -= part.arguments.length;
    }
    yield part;
  }
}
