/**
 * ImageCaches for the tests and benchmarks: the one builder of an ImageCache object
 * ({@link imageCache}) and of its text's header ({@link imageCacheHeader}), the folder of specs the
 * e2e tests and benchmarks synthesize ({@link specDir}), and generated caches of the scale shape
 * that bench:synth measures and the gitops tier replays: every pool draws from its own vocabulary
 * of images, so caches in one pool share images as real teams do.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_DIR } from './cluster/config.js';
import { API_VERSIONS, type ApiVersion } from '../src/index.js';

/** One `cacheSpec[]` entry. */
export interface CacheEntry {
  readonly pool?: string;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly Readonly<Record<string, unknown>>[];
  readonly images: readonly string[];
}

/** An ImageCache object as a spec file or the apiserver holds it (a type, so it is a KubeObject too). */
export type ImageCacheObject = {
  apiVersion: string;
  kind: 'ImageCache';
  metadata: { name: string; namespace: string };
  spec: { cacheSpec: readonly CacheEntry[] } & Record<string, unknown>;
};

/**
 * An ImageCache of `cacheSpec` in `namespace`, with the pool-wide `settings` (lanes, gate, earlyPull,
 * ...) beside it; kube-fledged's dialect with `API_VERSIONS.kubeFledged`.
 */
export function imageCache(
  namespace: string,
  name: string,
  cacheSpec: readonly CacheEntry[],
  settings: Readonly<Record<string, unknown>> = {},
  apiVersion: ApiVersion = API_VERSIONS.prewarm,
): ImageCacheObject {
  return { apiVersion, kind: 'ImageCache', metadata: { name, namespace }, spec: { cacheSpec, ...settings } };
}

/** The text of an ImageCache document up to and including its `spec:` line. */
export function imageCacheHeader(name: string, namespace?: string, apiVersion: ApiVersion = API_VERSIONS.prewarm): string {
  const ns = namespace === undefined ? [] : [`  namespace: ${namespace}`];
  return [`apiVersion: ${apiVersion}`, 'kind: ImageCache', 'metadata:', `  name: ${name}`, ...ns, 'spec:', ''].join('\n');
}

/** Pools the caches spread over. */
export const SCALE_POOLS = 50;
/** Images per cache. */
export const SCALE_IMAGES_PER_CACHE = 20;
/** Distinct images per pool. */
export const SCALE_VOCABULARY_PER_POOL = 200;

/** The image references of generated ImageCache `i`, under `registry`. Deterministic. */
export function scaleImages(i: number, registry: string): string[] {
  const pool = i % SCALE_POOLS;
  const images: string[] = [];
  for (let j = 0; j < SCALE_IMAGES_PER_CACHE; j++) {
    const k = (i * 7 + j * 13) % SCALE_VOCABULARY_PER_POOL;
    images.push(`${registry}/pool-${pool}/app-${k}:v1.${k % 10}`);
  }
  return images;
}

/** The text of generated ImageCache `i`, its images under `registry`. Deterministic. */
export function scaleImageCache(i: number, registry: string): string {
  const pool = i % SCALE_POOLS;
  return (
    imageCacheHeader(`cache-${i}`, `team-${pool % 10}`) +
    [
      '  cacheSpec:',
      '    - nodeSelector:',
      `        example.com/pool: p${pool}`,
      '      images:',
      ...scaleImages(i, registry).map((image) => `      - ${image}`),
      '',
    ].join('\n')
  );
}

/** Writes ImageCache specs into a fresh directory (for synth) and returns it. */
export function specDir(name: string, docs: readonly object[]): string {
  const base = join(STATE_DIR, 'e2e-specs');
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, `${name}-`));
  writeFileSync(join(dir, 'imagecache.yaml'), docs.map((d) => JSON.stringify(d, null, 2)).join('\n---\n') + '\n');
  return dir;
}
