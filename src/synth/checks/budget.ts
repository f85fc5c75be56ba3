/**
 * Bounds checked on the model before any construct is built. Synth builds every pull pod in
 * memory before it can measure the output, so a bundle far over the output's limits would run the
 * process out of memory before the output checks (output.ts) could refuse it. These checks
 * refuse such a bundle up front, with the same reason the output checks would give, or the run's
 * own bound.
 */
import type { Diagnostic } from '../../imagecache/errors.js';
import type { Bundle, Pool } from '../../imagecache/model.js';
import { OUTPUT_LIMITS } from './limits.js';
import { daemonSetName } from '../naming.js';

/**
 * The fewest bytes one image adds to its pool's DaemonSet as compact JSON: its container, for the
 * shortest reference (`a.b/c:1`), is 489 bytes. A pool with more images than
 * {@link MAX_POOL_IMAGES} has a DaemonSet over the apiserver's object limit whatever they are.
 */
export const MIN_IMAGE_CONTAINER_BYTES = 480;

/** Images in one pool beyond which its DaemonSet is certainly over the object limit (3,276). */
export const MAX_POOL_IMAGES = Math.floor(OUTPUT_LIMITS.objectBytes.limit / MIN_IMAGE_CONTAINER_BYTES);

/**
 * Images over all the pools of one run (an image in two pools counts twice), at most: what bounds
 * synth's memory, within the Argo CD sidecar's memory limit (docs/benchmarks.md, loader memory).
 * `bench:synth`'s largest bundle holds exactly this many.
 */
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
