/** Counting nouns in messages; a leaf, like quote.ts. */

/** `1 error`, `2 errors`. */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
