/**
 * The node annotation budget: each pool's sidecar writes one bounded annotation on every node the
 * pool selects, and the apiserver refuses a node whose annotations exceed its limit.
 */
import type { Diagnostic } from '../imagecache/errors.js';
import type { Bundle, Pool } from '../imagecache/model.js';
import { ANNOTATION_MAX_BYTES } from '../contract/annotation.js';
import { placementSelectsNode } from '../contract/placement.js';
import { error, listed, poolLocation, poolName } from './checks/diagnostics.js';

/** The apiserver's limit on all the annotations of one object together (`TotalAnnotationSizeLimitB`). */
export const NODE_ANNOTATIONS_LIMIT_BYTES = 256 * 1024;

/** What prewarm's annotations may take of {@link NODE_ANNOTATIONS_LIMIT_BYTES}: half, the rest for other writers. */
export const PREWARM_ANNOTATIONS_BUDGET_BYTES = NODE_ANNOTATIONS_LIMIT_BYTES / 2;

/** An error when the pools with a sidecar that one node could carry exceed the annotation budget (an upper bound). */
export function checkNodeAnnotations(bundle: Bundle): Diagnostic[] {
  let worst: { pool: Pool; on: Pool[] } | undefined;
  for (const pool of bundle.pools) {
    const node = { metadata: { labels: pool.nodeSelector } };
    const on = bundle.pools.filter((p) => placementSelectsNode(p.placement, node));
    if (worst === undefined || on.length > worst.on.length) worst = { pool, on };
  }
  if (worst === undefined || worst.on.length * ANNOTATION_MAX_BYTES <= PREWARM_ANNOTATIONS_BUDGET_BYTES) return [];
  const labels = Object.entries(worst.pool.nodeSelector).map(([k, v]) => `${k}=${v}`);
  const most = PREWARM_ANNOTATIONS_BUDGET_BYTES / ANNOTATION_MAX_BYTES;
  return [
    error(
      poolLocation(worst.pool),
      `${labels.length === 0 ? 'every node' : `a node labelled ${labels.join(',')}`} is selected by ${worst.on.length} pools ` +
        `(${listed(worst.on.map(poolName))}): each pool's sidecar writes an annotation of up to ${ANNOTATION_MAX_BYTES / 1024} KiB on it, ` +
        `and the apiserver refuses a node whose annotations total over ${NODE_ANNOTATIONS_LIMIT_BYTES / 1024} KiB; ` +
        `at most ${most} pools may select one node (merge pools that share nodes, or narrow their selectors)`,
    ),
  ];
}
