import { describe, expect, it } from 'vitest';
import { LineSplitter } from '../../src/http/lines.js';

/** Every line `text` gives when pushed in chunks of `size`. */
function split(text: string, size: number, max = 1 << 20): string[] {
  const s = new LineSplitter(max);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(...s.push(text.slice(i, i + size)));
  return out;
}

describe('LineSplitter', () => {
  const text = '{"a":1}\n\n{"b":2}\n{"c":3}\npartial';

  it('gives the same lines whatever the chunking, holding back the unfinished one', () => {
    const want = ['{"a":1}', '', '{"b":2}', '{"c":3}'];
    for (const size of [1, 2, 3, 7, 8, 100]) expect(split(text, size)).toEqual(want);
  });

  it('joins a line split over many chunks', () => {
    const long = 'x'.repeat(10_000);
    expect(split(`${long}\n${long}\n`, 97)).toEqual([long, long]);
  });

  it('turns overLimit only while the unfinished line is past the bound', () => {
    const s = new LineSplitter(5);
    expect(s.push('abc')).toEqual([]);
    expect(s.overLimit).toBe(false);
    expect(s.push('def')).toEqual([]);
    expect(s.overLimit).toBe(true);
    expect(s.push('\nok')).toEqual(['abcdef']);
    expect(s.overLimit).toBe(false);
  });

  it('counts only the unfinished part after a newline in the same chunk', () => {
    const s = new LineSplitter(5);
    expect(s.push('abcdefgh\nxyz')).toEqual(['abcdefgh']);
    expect(s.overLimit).toBe(false);
    expect(s.push('uvw')).toEqual([]);
    expect(s.overLimit).toBe(true);
  });
});
