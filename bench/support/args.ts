/** Command-line helpers the benchmarks share. */

/** A comma-separated option value as a list of known names; an unknown one ends the run naming the known ones. */
export function list<T extends string>(flag: string, value: string, known: readonly T[]): T[] {
  const out = value.split(',').map((x) => x.trim());
  for (const x of out) if (!known.includes(x as T)) throw new Error(`--${flag}: unknown ${x}; known: ${known.join(', ')}`);
  return out as T[];
}
