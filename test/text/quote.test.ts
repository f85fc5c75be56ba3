import { describe, expect, it } from 'vitest';
import { excerpt, quote } from '../../src/text/quote.js';

describe('quote: every input value in a message is a short, escaped excerpt', () => {
  const long = 'a'.repeat(1_000_000);
  it.each([
    ['a plain value', 'redis:7', '"redis:7"'],
    ['quotes and backslashes', 'a"b\\c', '"a\\"b\\\\c"'],
    ['newlines, tabs and carriage returns', 'a\nb\tc\rd', '"a\\nb\\tc\\rd"'],
    ['NUL bytes', 'a\u0000b', '"a\\x00b"'],
    ['a terminal escape sequence', '\u001b]0;pwned\u0007', '"\\x1b]0;pwned\\x07"'],
    ['DEL and a C1 control (CSI)', '\u007f\u009b', '"\\x7f\\x9b"'],
    ['direction overrides and invisible characters', 'a\u202eb\u200bc\u2066d\ufeff', '"a\\u202eb\\u200bc\\u2066d\\ufeff"'],
    ['line and paragraph separators', '\u2028\u2029', '"\\u2028\\u2029"'],
    ['an unpaired surrogate', 'a\ud800b', '"a\\ud800b"'],
    ['exactly 60 characters: kept whole', 'b'.repeat(60), `"${'b'.repeat(60)}"`],
    ['61 characters: cut, with the full length', 'b'.repeat(61), `"${'b'.repeat(60)}…" (61 chars)`],
    ['a megabyte: cut', long, `"${'a'.repeat(60)}…" (1000000 chars)`],
    ['a cut never splits a surrogate pair', `${'x'.repeat(59)}😀😀`, `"${'x'.repeat(59)}😀…" (63 chars)`],
    ['non-ASCII text stays readable', 'ünïcødé/图像', '"ünïcødé/图像"'],
  ])('%s', (_name, value, expected) => {
    expect(quote(value)).toBe(expected);
  });

  it('excerpt leaves quotes alone but escapes controls and cuts', () => {
    expect(excerpt('say "hi"\n')).toBe('say "hi"\\n');
    expect(excerpt('x'.repeat(10), 4)).toBe('xxxx… (10 chars)');
  });
});
