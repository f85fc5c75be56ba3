/**
 * Spec files built to exhaust the loader: alias bombs, deep nesting, and the largest files of each
 * shape under the size limit. Shared by the loader's tests (which assert that each ends with a
 * result or a clean error) and `npm run bench:loader` (which prints how long and how much memory).
 * Deterministic: the same arguments give the same text.
 */
import { imageCacheHeader } from './specs.js';

/** A prewarm ImageCache whose `spec:` body is `spec` (already indented by two spaces). */
export function imageCacheWith(spec: string, name = 'bomb'): string {
  return imageCacheHeader(name) + spec;
}

/**
 * Billion laughs: `levels` lists, each holding `fanout` aliases of the one before, under `images`.
 * Expanded, the last list holds fanout^levels strings.
 */
export function billionLaughs(levels: number, fanout: number): string {
  const lines = [`    - &l0 [${Array(fanout).fill('"x:1"').join(', ')}]`];
  for (let i = 1; i <= levels; i++)
    lines.push(
      `    - &l${i} [${Array(fanout)
        .fill(`*l${i - 1}`)
        .join(', ')}]`,
    );
  return imageCacheWith(`  cacheSpec:\n  - images:\n${lines.join('\n')}\n`);
}

/**
 * Doubling merge keys: each nodeSelector mapping merges the one before twice (`<<: [*m, *m]`), so
 * a naive expansion of the last does 2^levels merges.
 */
export function doublingMerges(levels: number, mergesPerMap = 2): string {
  const entries = [`  - images: ["x:1"]\n    nodeSelector: &m0 {k0: v}`];
  for (let i = 1; i <= levels; i++) {
    entries.push(
      `  - images: ["x:1"]\n    nodeSelector: &m${i} {<<: [${Array(mergesPerMap)
        .fill(`*m${i - 1}`)
        .join(', ')}], k${i}: v}`,
    );
  }
  return imageCacheWith(`  cacheSpec:\n${entries.join('\n')}\n`);
}

/** A chain of `length` mappings, each merging the one before: merge resolution `length` deep. */
export function mergeChain(length: number): string {
  const entries = [`  - images: ["x:1"]\n    nodeSelector: &m0 {k0: v}`];
  for (let i = 1; i <= length; i++) entries.push(`  - images: ["x:1"]\n    nodeSelector: &m${i} {<<: *m${i - 1}}`);
  return imageCacheWith(`  cacheSpec:\n${entries.join('\n')}\n`);
}

/** `aliases` cache entries, each an alias of one entry holding `images` images: each alias is read in full. */
export function manyAliasesToBigAnchor(images: number, aliases: number): string {
  const big = Array.from({ length: images }, (_, i) => `"registry.example.com/team/app-${i}:1"`).join(', ');
  const refs = Array(aliases).fill('  - *big').join('\n');
  return imageCacheWith(`  cacheSpec:\n  - &big {images: [${big}]}\n${refs}\n`);
}

/** `aliases` image aliases of one anchored image: many aliases, each cheap. */
export function manyAliases(aliases: number): string {
  const refs = Array(aliases).fill('*i').join(', ');
  return imageCacheWith(`  cacheSpec:\n  - images: [&i "x:1", ${refs}]\n`);
}

/** `depth` nested flow lists under `images`: `[[[…]]]`. */
export function deepFlowNesting(depth: number): string {
  return imageCacheWith(`  cacheSpec:\n  - images: ${'['.repeat(depth)}${']'.repeat(depth)}\n`);
}

/** `depth` nested block mappings under `nodeSelector`. */
export function deepBlockNesting(depth: number): string {
  let body = '';
  for (let i = 0; i < depth; i++) body += `${' '.repeat(6 + i)}k:\n`;
  return imageCacheWith(`  cacheSpec:\n  - images: ["x:1"]\n    nodeSelector:\n${body}`);
}

/** The shapes of {@link largestSpec}. */
export type SpecShape = 'flow' | 'block' | 'entries' | 'map';

/**
 * A spec close to `bytes` long, in one of the shapes the loader reads most expensively: one flow
 * list of images, one block list of images, many cache entries of one image, or one huge
 * nodeSelector mapping.
 */
export function largestSpec(shape: SpecShape, bytes: number): string {
  const head = imageCacheWith(shape === 'map' ? '  cacheSpec:\n  - images: ["x:1"]\n    nodeSelector:\n' : '  cacheSpec:\n');
  const parts: string[] = [head];
  let length = head.length + 2;
  if (shape === 'flow') {
    parts.push('  - images: [');
    length += 14;
  }
  if (shape === 'block') {
    parts.push('  - images:\n');
    length += 12;
  }
  for (let i = 0; ; i++) {
    const item =
      shape === 'flow'
        ? `${i === 0 ? '' : ', '}r.example/a-${i}:1`
        : shape === 'block'
          ? `    - r.example/a-${i}:1\n`
          : shape === 'entries'
            ? `  - images: [r.example/a-${i}:1]\n`
            : `      k${i}.example/k: v\n`;
    if (length + item.length > bytes) break;
    parts.push(item);
    length += item.length;
  }
  if (shape === 'flow') parts.push(']\n');
  return parts.join('');
}
