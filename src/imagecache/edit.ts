/**
 * In-place edits of YAML source text, pure. `pin` and `migrate --write` change a file only through
 * these: each edit replaces one exact span of the source, so every other byte (comments, quoting,
 * flow or block style, indentation, line endings, a BOM, bytes that are not UTF-8) stays as it was.
 */
import { isScalar, Scalar, type Node } from 'yaml';

/** Replace `text[start, end)` with `text`; an insertion when start === end. */
export interface TextEdit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * Applies `edits` to `text`. They may come in any order but must not overlap (two edits at one
 * insertion point are kept in the order given); overlapping edits are a bug in the caller.
 */
export function applyEdits(text: string, edits: readonly TextEdit[]): string {
  const sorted = edits.map((e, i) => ({ ...e, i })).sort((a, b) => a.start - b.start || a.end - b.end || a.i - b.i);
  let out = '';
  let at = 0;
  for (const e of sorted) {
    if (e.start < at || e.end < e.start || e.end > text.length)
      throw new Error(`overlapping or out-of-range edit [${e.start}, ${e.end}) after ${at}`);
    out += text.slice(at, e.start) + e.text;
    at = e.end;
  }
  return out + text.slice(at);
}

/** Where a scalar's value sits in the source. */
export interface ScalarSpan {
  /** The value, quotes excluded. */
  readonly start: number;
  readonly end: number;
  /**
   * True when the span holds the value character for character, so it can be replaced in place:
   * false for block scalars and quoted strings with escape sequences.
   */
  readonly literal: boolean;
}

/** The span of a string scalar parsed from `text`, or undefined for other nodes. */
export function scalarSpan(text: string, node: Node): ScalarSpan | undefined {
  if (!isScalar(node) || typeof node.value !== 'string' || node.range === undefined || node.range === null) return undefined;
  // Plain and quoted scalars span their value, plus the quotes; block scalars never do.
  const [start, valueEnd] = node.range;
  const quoted = node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE;
  const from = quoted ? start + 1 : start;
  const to = quoted ? valueEnd - 1 : valueEnd;
  return { start: from, end: to, literal: (node.type === Scalar.PLAIN || quoted) && text.slice(from, to) === node.value };
}

/** The line ending a file uses: CRLF when its first line ends so, else LF. */
export function lineEnding(text: string): '\r\n' | '\n' {
  const lf = text.indexOf('\n');
  return lf > 0 && text[lf - 1] === '\r' ? '\r\n' : '\n';
}
