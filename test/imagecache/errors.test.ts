import { describe, expect, it } from 'vitest';
import { formatDiagnostic, formatDiagnostics, SpecError, type Diagnostic, type Severity } from '../../src/imagecache/errors.js';
import { excerpt, quote } from '../../src/text/quote.js';

const at = (severity: Severity, line: number): Diagnostic => ({
  severity,
  file: 'f.yaml',
  document: 1,
  line,
  column: 1,
  path: '',
  message: `${severity} ${line}`,
});
const many = (severity: Severity, count: number, from = 1) => Array.from({ length: count }, (_, i) => at(severity, from + i));

describe('formatDiagnostics', () => {
  it.each([
    [
      'all of them when under the limit, in location order',
      [at('warning', 2), at('error', 1)],
      3,
      ['f.yaml:1:1: error: document 1: error 1', 'f.yaml:2:1: warning: document 1: warning 2'],
      undefined,
    ],
    ['exactly the limit: no count line', many('warning', 3), 3, ['warning 1', 'warning 2', 'warning 3'], undefined],
    [
      'warnings over the limit',
      many('warning', 5),
      3,
      ['warning 1', 'warning 2', 'warning 3'],
      '... and 2 more warnings, not shown (only the first 3 are)',
    ],
    [
      'errors before warnings, even when the warnings come first',
      [...many('warning', 5), at('error', 9)],
      3,
      ['warning 1', 'warning 2', 'error 9'],
      '... and 3 more warnings, not shown (only the first 3 are)',
    ],
    [
      'errors over the limit hide every warning',
      [...many('error', 4), ...many('warning', 2, 10)],
      3,
      ['error 1', 'error 2', 'error 3'],
      '... and 1 more error and 2 more warnings, not shown (only the first 3 are)',
    ],
  ])('%s', (_name, diagnostics, limit, shown, more) => {
    const lines = formatDiagnostics(diagnostics, limit);
    expect(lines.slice(0, shown.length).map((l) => l.replace(/^.*: /, ''))).toEqual(shown.map((s) => s.replace(/^.*: /, '')));
    expect(lines.slice(shown.length)).toEqual(more === undefined ? [] : [more]);
  });

  it('handles 150,000 diagnostics (no argument spreading)', () => {
    const lines = formatDiagnostics(many('warning', 150_000));
    expect(lines).toHaveLength(101);
    expect(lines[100]).toBe('... and 149900 more warnings, not shown (only the first 100 are)');
  });
});

describe('SpecError', () => {
  it('counts every error and lists at most 100 in its message', () => {
    const err = new SpecError(many('error', 150_000));
    expect(err.message.split('\n')).toHaveLength(102);
    expect(err.message).toMatch(/^150000 errors in input:\n/);
    expect(err.diagnostics).toHaveLength(150_000);
  });
});

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

  it('formatDiagnostic escapes file names and bounds messages that did not come through quote', () => {
    const line = formatDiagnostic({
      severity: 'error',
      file: 'evil\u001b[2J.yaml',
      document: 0,
      line: 0,
      column: 0,
      path: '',
      message: `x${'y'.repeat(5000)}\u0000`,
    });
    expect(line).toMatch(/^evil\\x1b\[2J\.yaml: error: xy+… \(5002 chars\)$/);
    expect(line.length).toBeLessThan(1100);
  });
});
