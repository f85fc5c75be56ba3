/** String order for everything prewarm sorts: by code point, never by locale. */

/** Compares two strings by code point (as Go and UTF-8 bytes do), correcting UTF-16's surrogate-pair order. */
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
