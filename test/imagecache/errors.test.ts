import { describe, expect, it } from 'vitest';
import { formatDiagnostic, formatDiagnostics, SpecError, type Diagnostic, type Severity } from '../../src/imagecache/errors.js';

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

describe('formatDiagnostic', () => {
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
