import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { applyEdits, lineEnding, scalarSpan, type TextEdit } from '../../src/imagecache/edit.js';

describe('applyEdits', () => {
  it.each<[string, string, TextEdit[], string]>([
    ['no edits', 'abc', [], 'abc'],
    ['a replacement', 'a: b\n', [{ start: 3, end: 4, text: 'c' }], 'a: c\n'],
    [
      'edits in any order',
      '0123456789',
      [
        { start: 8, end: 9, text: 'X' },
        { start: 1, end: 2, text: 'Y' },
      ],
      '0Y234567X9',
    ],
    [
      'an insertion next to a deletion that starts there',
      'ab\ncd\n',
      [
        { start: 3, end: 6, text: '' },
        { start: 3, end: 3, text: 'x\n' },
      ],
      'ab\nx\n',
    ],
    [
      'two insertions at one point, in the order given',
      'ac',
      [
        { start: 1, end: 1, text: 'b' },
        { start: 1, end: 1, text: 'B' },
      ],
      'abBc',
    ],
    [
      'adjacent deletions',
      '0123',
      [
        { start: 1, end: 2, text: '' },
        { start: 2, end: 3, text: '' },
      ],
      '03',
    ],
  ])('%s', (_name, text, edits, expected) => {
    expect(applyEdits(text, edits)).toBe(expected);
  });

  it.each<[string, TextEdit[]]>([
    [
      'overlapping edits',
      [
        { start: 0, end: 3, text: '' },
        { start: 2, end: 4, text: '' },
      ],
    ],
    ['an edit past the end', [{ start: 3, end: 9, text: '' }]],
    ['an edit that ends before it starts', [{ start: 3, end: 2, text: '' }]],
  ])('refuses %s: a bug in the caller', (_name, edits) => {
    expect(() => applyEdits('0123', edits)).toThrow(/overlapping or out-of-range edit/);
  });
});

describe('scalarSpan', () => {
  it.each<[string, string, { text: string; literal: boolean } | undefined]>([
    ['plain', 'a: redis:7   # c\n', { text: 'redis:7', literal: true }],
    ['double-quoted', 'a: "redis:7"\n', { text: 'redis:7', literal: true }],
    ['single-quoted', "a: 'redis:7'\n", { text: 'redis:7', literal: true }],
    ['escaped', 'a: "redis\\x3a7"\n', { text: 'redis\\x3a7', literal: false }],
    ['block', 'a: |-\n  redis:7\n', { text: '|-\n  redis:7\n', literal: false }],
    ['a number', 'a: 3.12\n', undefined],
  ])('%s', (_name, text, expected) => {
    const node = parseDocument(text, { version: '1.2' }).get('a', true) as Parameters<typeof scalarSpan>[1];
    const span = scalarSpan(text, node);
    expect(span === undefined ? undefined : { text: text.slice(span.start, span.end), literal: span.literal }).toEqual(expected);
  });
});

describe('lineEnding', () => {
  it.each([
    ['a\nb\r\n', '\n'],
    ['a\r\nb\n', '\r\n'],
    ['no break', '\n'],
    ['\n', '\n'],
  ])('%j uses %j', (text, eol) => {
    expect(lineEnding(text)).toBe(eol);
  });
});
