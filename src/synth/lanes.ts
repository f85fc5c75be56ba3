/**
 * Lanes: how a pool's images are split across the pods that pull them in parallel while a node
 * warms. Lane 0 is the holder (the pool's DaemonSet, which keeps every image); lanes 1..L-1 are the
 * burst pullers. The kubelet pulls one pod's images one after another, so L pods pull about L
 * images at a time (where the kubelet pulls in parallel at all: `serializeImagePulls: false`).
 *
 * The assignment is rendezvous (highest-random-weight) hashing: each image goes to the lane with
 * the highest hash of (image, lane). Adding or removing one image moves no other image, so it
 * changes at most one puller's pod template and rolls at most that puller (plus the holder, which
 * holds every image). Pure and deterministic: no randomness, no order dependence.
 */
import { createHash } from 'node:crypto';
import type { ImageRef } from '../imagecache/reference.js';

/** The images of each lane, lane 0 (the holder's own share) first. */
export type LaneAssignment = readonly (readonly ImageRef[])[];

/** The weight of `image` on `lane`: the first 48 bits of SHA-256, exact in a double. */
function weight(image: string, lane: number): number {
  return createHash('sha256').update(`${image}\u0000${lane}`).digest().readUIntBE(0, 6);
}

/**
 * Splits `images` (in their canonical order) across `lanes` lanes. Lanes may come out empty when
 * there are fewer images than lanes; callers emit no puller for an empty lane.
 */
export function assignLanes(images: readonly ImageRef[], lanes: number): LaneAssignment {
  if (!Number.isInteger(lanes) || lanes < 1) throw new Error(`lanes must be a positive integer, got ${lanes}`);
  const out: ImageRef[][] = Array.from({ length: lanes }, () => []);
  for (const image of images) {
    let best = 0;
    let bestWeight = -1;
    for (let lane = 0; lane < lanes; lane++) {
      const w = weight(image.canonical, lane);
      // Ties (2^-48) go to the lower lane, so the result never depends on iteration details.
      if (w > bestWeight) {
        best = lane;
        bestWeight = w;
      }
    }
    out[best]?.push(image);
  }
  return out;
}

/**
 * The holder's container order: its own lane first (images no puller has, so the holder's first
 * pulls overlap the pullers' instead of repeating them), then the images the pullers fetch, which
 * are usually present by the time the holder reaches them. Each part keeps the canonical order.
 */
export function holderOrder(images: readonly ImageRef[], assignment: LaneAssignment): ImageRef[] {
  const own = new Set(assignment[0] ?? []);
  return [...images.filter((i) => own.has(i)), ...images.filter((i) => !own.has(i))];
}
