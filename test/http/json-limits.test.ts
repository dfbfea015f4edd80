import { inspectedBody, nestsDeeperThan, refusalOf, refusedBody } from '../../src/http/json-limits';

describe('json-limits', () => {
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it('measures nesting of arrays and objects, not brackets inside strings', () => {
    expect(nestsDeeperThan(nested(3), 3)).toBe(false);
    expect(nestsDeeperThan(nested(4), 3)).toBe(true);
    expect(nestsDeeperThan('{"a":{"b":[{"c":1}]}}', 4)).toBe(false);
    expect(nestsDeeperThan('{"a":{"b":[{"c":1}]}}', 3)).toBe(true);
    expect(nestsDeeperThan(JSON.stringify({ text: '[[[[[[{{{{' }), 1)).toBe(false);
    // Escaped quotes and backslashes do not end a string early.
    expect(nestsDeeperThan(JSON.stringify({ text: 'say \\"[[[[\\" and \\\\', more: '[[[[' }), 1)).toBe(false);
    expect(nestsDeeperThan(`[${JSON.stringify('a\\')}, [[1]]]`, 2)).toBe(true);
    expect(nestsDeeperThan('["unterminated', 1)).toBe(false);
  });

  it('stops at the first level past the limit, whatever follows', () => {
    const bomb = '['.repeat(5_000_000);
    const started = performance.now();
    expect(nestsDeeperThan(bomb, 64)).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000); // a scan of 65 characters, not 5 million
  });

  it('refuses NUL and unpaired surrogates in strings and keys, naming the path', () => {
    const check = (value: unknown) => refusalOf(inspectedBody(JSON.stringify(value), value));
    expect(check({ input: 'a\u0000b' })).toBe('input: must not contain NUL (\\u0000) characters');
    expect(check({ tools: [{ parameters: { deep: ['ok', 'x\ud800'] } }] })).toBe(
      'tools[0].parameters.deep[1]: must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)',
    );
    expect(check({ metadata: { 'k\u0000': 'v' } })).toBe(
      'metadata.k\u0000 (a key): must not contain NUL (\\u0000) characters',
    );
    expect(check(['\udc00 alone'])).toMatch(/^\[0\]: .*surrogates/);
    // A surrogate pair (an emoji, escaped) and the six characters backslash-u-0-0-0-0 are fine.
    expect(check({ input: 'smile \ud83d\ude00' })).toBeUndefined();
    expect(check({ input: 'escape NUL as \\u0000 in JSON' })).toBeUndefined();
    // The answer is remembered: a second parse of the same body does not walk it again.
    const body = { input: 'a\u0000' };
    inspectedBody(JSON.stringify(body), body);
    expect(refusalOf(body)).toMatch(/NUL/);
    expect(refusalOf(body)).toMatch(/NUL/);
  });

  it('walks only bodies whose text holds a real escape of NUL or a surrogate', () => {
    const literal = { input: 'a \\u0000 and \\ud800, escaped backslashes' };
    const text = JSON.stringify(literal);
    expect(text).toContain('\\\\u0000');
    // Marked or not, nothing is refused; an unmarked body is never walked (a NUL added after the fact is not seen).
    const body = inspectedBody(text, literal) as { input: string };
    body.input += '\u0000';
    expect(refusalOf(body)).toBeUndefined();
    expect(refusalOf(refusedBody('too deep'))).toBe('too deep');
    expect(refusalOf('text')).toBeUndefined();
  });
});
