/**
 * Spec diagnostics. Every problem found in user input is a {@link Diagnostic} that names the file,
 * the document within it, the position and the field path, so a user can jump straight to it.
 */

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

/** Renders a diagnostic the way compilers do: `file:line:col: doc N: path: message`. */
export function formatDiagnostic(d: Diagnostic): string {
  const pos = d.line > 0 ? `${d.file}:${d.line}:${d.column}` : d.file;
  const path = d.path === '' ? '' : ` ${d.path}:`;
  const doc = d.document > 0 ? ` document ${d.document}:` : '';
  return `${pos}: ${d.severity}:${doc}${path} ${d.message}`;
}

/** Orders diagnostics by file, then position, so output never depends on discovery order. */
export function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  return (
    cmp(a.file, b.file) ||
    a.document - b.document ||
    a.line - b.line ||
    a.column - b.column ||
    cmp(a.path, b.path) ||
    cmp(a.message, b.message)
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Thrown when the input has at least one error; carries every diagnostic found, sorted. */
export class SpecError extends Error {
  /** Every diagnostic, errors and warnings, sorted by location. */
  readonly diagnostics: readonly Diagnostic[];

  constructor(diagnostics: readonly Diagnostic[]) {
    const sorted = [...diagnostics].sort(compareDiagnostics);
    const errors = sorted.filter((d) => d.severity === 'error');
    super(
      errors.length === 0
        ? 'invalid input'
        : `${errors.length} error${errors.length === 1 ? '' : 's'} in input:\n` +
            errors.map(formatDiagnostic).join('\n'),
    );
    this.name = 'SpecError';
    this.diagnostics = sorted;
  }
}
