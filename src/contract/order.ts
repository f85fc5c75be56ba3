/**
 * String order for everything prewarm sorts: by Unicode code point, never by locale, so output is
 * the same on every machine. Synth sorts what it emits with it and the sidecar, status and doctor
 * sort what they show with it, so it sits in the contract, below all of them.
 */

/**
 * Compares two strings by code point: negative, zero or positive, and zero only for equal
 * strings. JavaScript's `<` compares UTF-16 code units, which agrees with code points except where
 * a character outside the Basic Multilingual Plane (a surrogate pair) meets one from U+E000 to
 * U+FFFF; that one case is corrected here, so the order is the one Go and UTF-8 bytes give.
 */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  const x = a.charCodeAt(i);
  const y = b.charCodeAt(i);
  const xs = isSurrogate(x);
  if (xs !== isSurrogate(y) && Math.max(x, y) >= 0xe000) return xs ? 1 : -1;
  return x - y;
}

/** A comparator of objects by one string key, in {@link compareStrings} order. */
export function byKey<T>(key: (item: T) => string): (a: T, b: T) => number {
  return (a, b) => compareStrings(key(a), key(b));
}

function isSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdfff;
}
