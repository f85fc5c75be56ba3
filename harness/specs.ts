/**
 * Generated ImageCaches of the scale shape that bench:synth measures and the gitops tier replays
 * through the Argo CD plugin: 20 images each, over 50 pools, every pool drawing from its own
 * vocabulary of 200 images so that caches in one pool share images as real teams do. Also the
 * folder of specs the e2e tests and benchmarks synthesize ({@link specDir}).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_DIR } from './cluster/config.js';

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
  return [
    'apiVersion: prewarm.dev/v1alpha1',
    'kind: ImageCache',
    'metadata:',
    `  name: cache-${i}`,
    `  namespace: team-${pool % 10}`,
    'spec:',
    '  cacheSpec:',
    '    - nodeSelector:',
    `        example.com/pool: p${pool}`,
    '      images:',
    ...scaleImages(i, registry).map((image) => `      - ${image}`),
    '',
  ].join('\n');
}

/** Writes ImageCache specs into a fresh directory (for synth) and returns it. */
export function specDir(name: string, docs: Record<string, unknown>[]): string {
  const base = join(STATE_DIR, 'e2e-specs');
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, `${name}-`));
  writeFileSync(join(dir, 'imagecache.yaml'), docs.map((d) => JSON.stringify(d, null, 2)).join('\n---\n') + '\n');
  return dir;
}
