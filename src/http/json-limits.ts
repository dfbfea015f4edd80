/**
 * What a JSON request body may hold beyond being valid JSON, for every route: the body reader checks the
 * nesting before parsing, and `parseInput` refuses what the reader marked. Bodies end up in Postgres jsonb
 * and text columns and in JSON.stringify calls, so:
 *
 * - nesting is bounded: 10 MB of brackets takes JSON.parse seconds, overflows the stack of a later
 *   JSON.stringify, and a few hundred levels crash the embedded database's jsonb parser (WebAssembly has a
 *   small stack), over and over once such a Response is stored and its job resumed;
 * - strings and keys must be storable: Postgres refuses U+0000 and unpaired UTF-16 surrogates in text
 *   and jsonb, which would otherwise surface as a 500 at insert time.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Bodies the reader refused, with the reason, and parsed bodies whose text holds an escape that may decode to
 * unstorable text (walked on first use). Both are raised by `parseInput`, which every route that takes a body
 * runs on it: so the 400 carries that route's error area like any other invalid field, and the walk happens
 * only after authentication.
 */
const refusals = new WeakMap<object, string>();
const unchecked = new WeakSet<object>();

/** A stand-in for a body refused unparsed (too deep), refused with `message`. */
export function refusedBody(message: string): object {
  const standIn = {};
  refusals.set(standIn, message);
  return standIn;
}

/** The parsed body, marked for the text check when its JSON text holds a `\u` escape of NUL or a surrogate. */
export function inspectedBody(text: string, body: unknown): unknown {
  if (body !== null && typeof body === 'object' && SUSPICIOUS_ESCAPE.test(text)) unchecked.add(body);
  return body;
}

/** Why this body cannot be accepted whatever the schema, if so. */
export function refusalOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (unchecked.delete(value)) {
    const found = findUnstorable(value);
    if (found) refusals.set(value, `${found.path}: ${found.reason}`);
  }
  return refusals.get(value);
}

/**
 * Whether the arrays and objects of JSON text nest deeper than `limit`. Scans the text (strings skipped
 * with indexOf), stopping at the first level past the limit, so a bracket bomb is refused before parsing.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      index = closingQuote(text, index);
      if (index === -1) return false; // unterminated string: JSON.parse reports it
    } else if (code === OPEN_BRACKET || code === OPEN_BRACE) {
      if (++depth > limit) return true;
    } else if (code === CLOSE_BRACKET || code === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

/**
 * The path (`input`, `tools[0].parameters.x`) of the first string or key Postgres could not store, with the
 * reason. In a request body both characters can only arrive as `\u` escapes in the JSON text (a raw NUL is invalid
 * JSON, and UTF-8 decoding never yields a lone surrogate), which is why only bodies marked by `inspectedBody` are
 * walked. Iterative, depth first in document order: a value parsed elsewhere (a form field's JSON) may nest far
 * deeper than a recursion's stack would take.
 */
export function findUnstorable(value: unknown): { path: string; reason: string } | undefined {
  const pending: Array<[unknown, string]> = [[value, '']];
  while (pending.length > 0) {
    const [next, path] = pending.pop()!;
    if (typeof next === 'string') {
      const reason = unstorableText(next);
      if (reason) return { path: path || 'body', reason };
    } else if (Array.isArray(next)) {
      for (let index = next.length - 1; index >= 0; index--) pending.push([next[index], `${path}[${index}]`]);
    } else if (next && typeof next === 'object') {
      const entries = Object.entries(next);
      for (const [key] of entries) {
        const keyReason = unstorableText(key);
        if (keyReason) return { path: `${path ? `${path}.${key}` : key} (a key)`, reason: keyReason };
      }
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, inner] = entries[index]!;
        pending.push([inner, path ? `${path}.${key}` : key]);
      }
    }
  }
  return undefined;
}

/** Why Postgres could not store this text (in a text or jsonb column), if it could not. */
export function unstorableText(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL (\\u0000) characters';
  if (LONE_SURROGATE.test(text)) return 'must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)';
  return undefined;
}

/** Index of the quote closing the string opened at `open`, or -1. */
function closingQuote(text: string, open: number): number {
  let end = open;
  for (;;) {
    end = text.indexOf('"', end + 1);
    if (end === -1) return -1;
    let backslashes = 0;
    for (let back = end - 1; text.charCodeAt(back) === BACKSLASH; back--) backslashes++;
    if (backslashes % 2 === 0) return end;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/**
 * An escape (an odd run of backslashes before `u`) of NUL or of any surrogate, paired ones too: the walk tells
 * them apart. An escaped backslash followed by the letters `u0000` is not one.
 */
const SUSPICIOUS_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;
