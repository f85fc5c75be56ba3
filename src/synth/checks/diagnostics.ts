/**
 * Where synth's findings point, and how they are settled: every finding names the spec entry that
 * made the object (file:line) through the pools' origins, so a refusal says what to change.
 */
import { compareDiagnostics, SpecError, type Diagnostic, type Location } from '../../imagecache/errors.js';
import type { Pool } from '../../imagecache/model.js';

/**
 * Throws a {@link SpecError} carrying every diagnostic when one is an error; otherwise reports the
 * warnings, ordered by location as errors are.
 */
export function settle(diagnostics: readonly Diagnostic[], onWarning?: (warning: Diagnostic) => void): void {
  if (diagnostics.some((d) => d.severity === 'error')) throw new SpecError(diagnostics);
  if (onWarning !== undefined) for (const d of [...diagnostics].sort(compareDiagnostics)) onWarning(d);
}

/** An error at `at`. */
export function error(at: Location, message: string): Diagnostic {
  return { ...at, severity: 'error', message };
}

/** A pool as messages name it: `namespace/name`, the name its DaemonSets and node label carry. */
export function poolName(pool: Pool): string {
  return `${pool.namespace}/${pool.id}`;
}

/** Where a pool was first written: its first entry. */
export function poolLocation(pool: Pool): Location {
  const origin = pool.origins[0];
  if (origin === undefined) throw new Error(`pool ${poolName(pool)} has no origin`);
  return origin.location;
}

/** Where an image of a pool was first listed: the entry, with the image's index in its path. */
export function imageLocation(pool: Pool, canonical: string): Location {
  for (const origin of pool.origins) {
    const i = origin.images.indexOf(canonical);
    if (i >= 0) return { ...origin.location, path: `${origin.location.path}.images[${i}]` };
  }
  return poolLocation(pool);
}

/** The ImageCache and entry a pool was first written in, for a message about another pool. */
export function describePool(pool: Pool): string {
  const origin = pool.origins[0];
  return origin === undefined ? poolName(pool) : `ImageCache ${origin.imageCache} (${where(origin.location)})`;
}

/** `file:line:column path`, as a message quotes a second location. */
export function where(l: Location): string {
  return `${l.file}:${l.line}:${l.column}${l.path === '' ? '' : ` ${l.path}`}`;
}

/** Findings about an object that no single spec entry made (a ConfigMap listing every pool) name the object where a file would go. */
export function objectLocation(object: string): Location {
  return { file: object, document: 0, line: 0, column: 0, path: '' };
}

/** At most five items, then how many more. */
export function listed(items: readonly string[]): string {
  return items.length <= 5 ? items.join(', ') : `${items.slice(0, 5).join(', ')} and ${items.length - 5} more`;
}

/** Records `value` under `key` unless a value is there already; returns that earlier value. */
export function claim<T>(claims: Map<string, T>, key: string, value: T): T | undefined {
  const earlier = claims.get(key);
  if (earlier === undefined) claims.set(key, value);
  return earlier;
}

/** Returns every value that occurs more than once, once each, in order of second occurrence. */
export function duplicates(values: readonly string[]): string[] {
  const seen = new Set<string>();
  const out = new Set<string>();
  for (const v of values) (seen.has(v) ? out : seen).add(v);
  return [...out];
}
