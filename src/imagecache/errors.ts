/**
 * Spec diagnostics. Every problem found in user input is a {@link Diagnostic} that names the file,
 * the document within it, the position and the field path, so a user can jump straight to it.
 */
import { compareStrings } from '../contract/order.js';

import { excerpt } from '../text/quote.js';

import { plural } from '../text/plural.js';

/** Where in the input a diagnostic points. */
export interface Location {
  /** The file as the user named it (relative paths stay relative). */
  readonly file: string;
  /** 1-based index of the YAML document within the file. */
  readonly document: number;
  /** 1-based line; 0 when the position is unknown. */
  readonly line: number;
  /** 1-based column; 0 when the position is unknown. */
  readonly column: number;
  /** Field path inside the document, e.g. `spec.cacheSpec[0].images[2]`; empty for the document. */
  readonly path: string;
}

/** Severity of a diagnostic: errors fail the run, warnings are reported and the run goes on. */
export type Severity = 'error' | 'warning';

/** One problem in the input. */
export interface Diagnostic extends Location {
  readonly severity: Severity;
  readonly message: string;
}

/** Longest rendered file name and message: a last bound for text that did not come through {@link quote}. */
const MAX_RENDERED_CHARS = 1000;

/** Renders a diagnostic the way compilers do: `file:line:col: doc N: path: message`. */
export function formatDiagnostic(d: Diagnostic): string {
  const file = excerpt(d.file, MAX_RENDERED_CHARS);
  const pos = d.line > 0 ? `${file}:${d.line}:${d.column}` : file;
  const path = d.path === '' ? '' : ` ${excerpt(d.path, MAX_RENDERED_CHARS)}:`;
  const doc = d.document > 0 ? ` document ${d.document}:` : '';
  return `${pos}: ${d.severity}:${doc}${path} ${excerpt(d.message, MAX_RENDERED_CHARS)}`;
}

/** Input passed over on purpose, counted so the user can see it was seen. */
export interface Skipped {
  /** Documents of other API groups, or without apiVersion and kind (plain YAML). */
  readonly documents: number;
  /** Files that hold at least one of those documents. */
  readonly files: number;
  /** Documents prewarm itself wrote (a synth output folder inside a spec folder). */
  readonly outputDocuments: number;
  /** Files that hold at least one of those. */
  readonly outputFiles: number;
  /** Files inside a Helm chart's `templates/` folder: Go templates, not YAML. */
  readonly helmTemplates: number;
}

/** Nothing skipped. */
export const NOTHING_SKIPPED: Skipped = Object.freeze({ documents: 0, files: 0, outputDocuments: 0, outputFiles: 0, helmTemplates: 0 });

/** One line saying what was skipped, e.g. `skipped 12 documents of other kinds in 5 files`; undefined when nothing was. */
export function formatSkipped(s: Skipped): string | undefined {
  const parts: string[] = [];
  if (s.documents > 0) parts.push(`${plural(s.documents, 'document')} of other kinds in ${plural(s.files, 'file')}`);
  if (s.outputDocuments > 0)
    parts.push(`${plural(s.outputDocuments, 'document')} of prewarm's own output in ${plural(s.outputFiles, 'file')}`);
  if (s.helmTemplates > 0) parts.push(plural(s.helmTemplates, 'Helm chart template'));
  return parts.length === 0 ? undefined : `skipped ${parts.join(', ')}`;
}

/** How many diagnostics are shown; the rest are only counted, so a flood never fills a CI log. */
export const MAX_SHOWN_DIAGNOSTICS = 100;

/**
 * Renders diagnostics one per line, in location order, at most `limit` of them plus one line that
 * counts the rest. Errors are chosen before warnings, so a flood of warnings never hides an error.
 */
export function formatDiagnostics(diagnostics: readonly Diagnostic[], limit: number = MAX_SHOWN_DIAGNOSTICS): string[] {
  const errors = diagnostics.filter((d) => d.severity === 'error');
  const warnings = diagnostics.filter((d) => d.severity !== 'error');
  const shown = errors
    .slice(0, limit)
    .concat(warnings.slice(0, Math.max(0, limit - errors.length)))
    .sort(compareDiagnostics);
  const lines = shown.map(formatDiagnostic);
  const moreErrors = errors.length - Math.min(errors.length, limit);
  const moreWarnings = warnings.length - (shown.length - (errors.length - moreErrors));
  if (moreErrors + moreWarnings > 0) {
    const parts = [plural(moreErrors, 'more error'), plural(moreWarnings, 'more warning')].filter((p) => !p.startsWith('0 '));
    lines.push(`... and ${parts.join(' and ')}, not shown (only the first ${limit} are)`);
  }
  return lines;
}

/** Orders diagnostics by file, then position, so output never depends on discovery order. */
export function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  return (
    compareStrings(a.file, b.file) ||
    a.document - b.document ||
    a.line - b.line ||
    a.column - b.column ||
    compareStrings(a.path, b.path) ||
    compareStrings(a.message, b.message)
  );
}

/** Thrown when the input has at least one error; carries every diagnostic found, sorted. */
export class SpecError extends Error {
  /** Every diagnostic, errors and warnings, sorted by location. */
  readonly diagnostics: readonly Diagnostic[];
  /** Input passed over on purpose. */
  readonly skipped: Skipped;

  constructor(diagnostics: readonly Diagnostic[], skipped: Skipped = NOTHING_SKIPPED) {
    const sorted = [...diagnostics].sort(compareDiagnostics);
    const errors = sorted.filter((d) => d.severity === 'error');
    super(errors.length === 0 ? 'invalid input' : `${plural(errors.length, 'error')} in input:\n${formatDiagnostics(errors).join('\n')}`);
    this.name = 'SpecError';
    this.diagnostics = sorted;
    this.skipped = skipped;
  }
}
