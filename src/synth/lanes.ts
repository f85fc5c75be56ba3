/**
 * Lanes: how a pool's images are split across the pods that pull them in parallel while a node
 * warms. The holder (the pool's DaemonSet) keeps every image and runs the sidecar; with
 * `lanes: L > 1`, up to L-1 burst pullers pull the images beside it. The kubelet pulls one pod's
 * images one after another, so the pullers pull about L-1 images at a time (where the kubelet
 * pulls in parallel at all: `serializeImagePulls: false`).
 *
 * Every image is assigned to a puller; the holder has no share of its own. Measured on real
 * kubelets (docs/benchmarks.md): the kubelet publishes a pod's container statuses only after it
 * has started every container of the pod (one SyncPod), so an image only the holder pulled is seen
 * as present only once the holder has started all of its containers, after its sidecar's own pull.
 * That put the holder's whole sequence on the critical path (3 lanes: warm at 18.3 s, while the
 * pullers' statuses were out at 7.6 s and 13.5 s).
 *
 * A lane finishes when its last image has started, so the slowest lane sets the warm-up, and the
 * split must be even as well as stable:
 *
 *  - **A pool of at most L-1 images gets one puller per image**, keyed by a hash of the image
 *    (`puller-<hash>`): perfectly even, and adding or removing an image adds or removes exactly
 *    that image's puller.
 *  - **A larger pool is split over L-1 numbered lanes by rendezvous (highest-random-weight)
 *    hashing**: each image goes to the lane with the highest hash of (image, lane). Adding or
 *    removing one image moves no other image, so it changes at most one puller.
 *
 * Only the step across the threshold (a pool growing from L-1 to L images, or shrinking back)
 * re-cuts the pullers at once. Rendezvous alone was measured too uneven for small pools: 5
 * images over 5 puller lanes filled only 3 of them, one with 3 images. Re-cutting pullers costs no
 * pod on a warm node, since pullers run only on warming nodes. Pure and deterministic.
 */
import { createHash } from 'node:crypto';
import type { ImageRef } from '../oci/reference.js';
import { shortHash } from '../contract/identity.js';

/** One burst puller: its key (a lane number, or an image hash) and its images, never empty. */
export interface PullerLane {
  /** `1`..`L-1` for a rendezvous lane, or the 8-hex hash of the one image it pulls. */
  readonly key: string;
  readonly images: readonly ImageRef[];
}

/** The weight of `image` on `lane`: the first 48 bits of SHA-256, exact in a double. */
function weight(image: string, lane: number): number {
  return createHash('sha256').update(`${image}\u0000${lane}`).digest().readUIntBE(0, 6);
}

/** The pool's burst pullers for `lanes` lanes (none for one lane), sorted by key. */
export function pullerLanes(images: readonly ImageRef[], lanes: number): PullerLane[] {
  if (!Number.isInteger(lanes) || lanes < 1) throw new Error(`lanes must be a positive integer, got ${lanes}`);
  if (lanes === 1) return [];
  if (images.length <= lanes - 1)
    return images.map((image) => ({ key: shortHash(image.canonical), images: [image] })).sort((a, b) => (a.key < b.key ? -1 : 1));
  const out: ImageRef[][] = Array.from({ length: lanes }, () => []);
  for (const image of images) {
    let best = 1;
    let bestWeight = -1;
    for (let lane = 1; lane < lanes; lane++) {
      const w = weight(image.canonical, lane);
      // Ties (2^-48) go to the lower lane, so the result never depends on iteration details.
      if (w > bestWeight) {
        best = lane;
        bestWeight = w;
      }
    }
    out[best]?.push(image);
  }
  return out.flatMap((l, lane) => (l.length === 0 ? [] : [{ key: String(lane), images: l }]));
}
