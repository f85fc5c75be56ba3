import { describe, expect, it } from 'vitest';
import { byKey, compareStrings } from '../../src/contract/order.js';

describe('compareStrings', () => {
  it.each([
    ['a', 'a', 0],
    ['', '', 0],
    ['a', 'b', -1],
    ['b', 'a', 1],
    ['a', 'ab', -1],
    ['ab', 'a', 1],
    ['', 'a', -1],
    ['B', 'a', -1], // capitals first: code points, not a locale's order
    ['a-b', 'a/b', -1],
    ['ml/web', 'ml/db', 1],
    // U+FFFD against U+1F600 (a surrogate pair in UTF-16): code units say the emoji is smaller,
    // code points say it is larger.
    ['\ufffd', '\u{1f600}', -1],
    ['\u{1f600}', '\ufffd', 1],
    ['\u{1f600}', '\u{1f601}', -1],
    ['\u{1f600}', '\u{1f600}', 0],
    ['\ud7ff', '\u{10000}', -1],
  ])('%j vs %j', (a, b, sign) => {
    expect(Math.sign(compareStrings(a, b))).toBe(sign);
  });

  it('returns 0 for equal strings, so a stable sort keeps their order', () => {
    const items = [
      { k: 'b', i: 0 },
      { k: 'a', i: 1 },
      { k: 'b', i: 2 },
      { k: 'a', i: 3 },
    ];
    expect(items.sort(byKey((x) => x.k)).map((x) => x.i)).toEqual([1, 3, 0, 2]);
  });
});
