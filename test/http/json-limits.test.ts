import { findUnstorableText, nestsDeeperThan } from '../../src/http/json-limits';

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

  it('finds NUL and unpaired surrogates in strings and keys, with their path', () => {
    const check = (value: unknown) => findUnstorableText(JSON.stringify(value), value);
    expect(check({ input: 'a\u0000b' })).toEqual({ path: 'input', reason: expect.stringContaining('NUL') });
    expect(check({ tools: [{ parameters: { deep: ['ok', 'x\ud800'] } }] })).toEqual({
      path: 'tools[0].parameters.deep[1]',
      reason: expect.stringContaining('surrogate'),
    });
    expect(check({ metadata: { 'k\u0000': 'v' } })).toEqual({ path: 'metadata.k\u0000 (a key)', reason: expect.stringContaining('NUL') });
    expect(check('\udc00 alone')).toEqual({ path: 'body', reason: expect.stringContaining('surrogate') });
    // A surrogate pair (an emoji, escaped) and the six characters backslash-u-0-0-0-0 are fine.
    expect(check({ input: 'smile \ud83d\ude00' })).toBeUndefined();
    expect(check({ input: 'escape NUL as \\u0000 in JSON' })).toBeUndefined();
  });
});
