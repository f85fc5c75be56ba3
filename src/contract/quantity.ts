/**
 * Kubernetes quantities (`resource.Quantity`) as numbers: what synth requests for its containers
 * and what doctor reads from nodes (`ephemeral-storage` capacity). One parser with the apiserver's
 * grammar, so both read a quantity as Kubernetes does.
 */

/** `<sign><digits>[.<digits>]` then a binary suffix, a decimal suffix or a decimal exponent. */
const QUANTITY = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?[0-9]+))?$/;

/** The multiplier of each suffix: powers of 1024 for the binary ones, of 1000 for the decimal ones. */
const SUFFIXES: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/**
 * The value of a quantity such as `128Mi`, `1.5G`, `250m`, `1e3` or `107374182400`, as a number
 * (bytes for memory and storage, cores for CPU); undefined when `text` is not a quantity. Large
 * values lose precision beyond 2^53, which no figure prewarm compares comes near.
 */
export function parseQuantity(text: string): number | undefined {
  const m = QUANTITY.exec(text);
  if (m === null) return undefined;
  const [, number = '', suffix, exponent] = m;
  if (exponent !== undefined) return Number(`${number}e${exponent}`);
  return Number(number) * (suffix === undefined ? 1 : (SUFFIXES[suffix] ?? Number.NaN));
}
