/**
 * Bounds checked on the model before any construct is built, so a bundle far over the output's
 * limits is refused before synth runs out of memory building it.
 */
import type { Diagnostic } from '../../imagecache/errors.js';
import type { Bundle, Pool } from '../../imagecache/model.js';
import { OUTPUT_LIMITS } from './limits.js';
import { daemonSetName } from '../naming.js';

/** The fewest bytes one image adds to its pool's DaemonSet as compact JSON (a lower bound of its container). */
export const MIN_IMAGE_CONTAINER_BYTES = 480;

/** Images in one pool beyond which its DaemonSet is certainly over the object limit (3,276). */
export const MAX_POOL_IMAGES = Math.floor(OUTPUT_LIMITS.objectBytes.limit / MIN_IMAGE_CONTAINER_BYTES);

/** Images over all the pools of one run, at most: what bounds synth's memory (docs/benchmarks.md). */
export const MAX_RUN_IMAGES = 10_000;

/** Pools too large to build, and the run's image budget; errors that point at the pool's first entry. */
export function checkBundleSize(bundle: Bundle): Diagnostic[] {
  const out: Diagnostic[] = [];
  let total = 0;
  for (const pool of bundle.pools) {
    const images = pool.images.length;
    if (images > MAX_POOL_IMAGES) {
      out.push(
        error(
          pool,
          `DaemonSet ${pool.namespace}/${daemonSetName(pool.id)} would hold ${count(images)} images, at least ${MIN_IMAGE_CONTAINER_BYTES} bytes ` +
            `of JSON each: over ${count(OUTPUT_LIMITS.objectBytes.limit)} bytes, which the apiserver refuses (at most ${count(MAX_POOL_IMAGES)} images ` +
            `fit in any case); split the pool's images across pools`,
        ),
      );
    }
    total += images;
    if (total > MAX_RUN_IMAGES) {
      out.push(
        error(
          pool,
          `with this pool, the pools of this run hold more than ${count(MAX_RUN_IMAGES)} images in all (an image counts once per pool), ` +
            `the most one run synthesizes; not built (synthesize fewer specs per run)`,
        ),
      );
      break;
    }
  }
  return out;
}

function error(pool: Pool, message: string): Diagnostic {
  const origin = pool.origins[0];
  if (origin === undefined) throw new Error(`pool ${pool.namespace}/${pool.key} has no origin`);
  return { ...origin.location, severity: 'error', message };
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}
