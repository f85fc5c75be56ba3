/**
 * Lanes: how a pool's images are split across the pods that pull them in parallel while a node
 * warms. The holder (the pool's DaemonSet) keeps every image and runs the sidecar. `lanes` is how
 * many pods pull the images at once: with `lanes: 1` the holder pulls them itself, with `lanes: L
 * > 1` L burst pullers do (never more than the pool has images) and the holder pulls none, so a
 * warming node runs L+1 pods of the pool. The kubelet pulls one pod's images one after another, so
 * the pullers pull about L images at a time (where the kubelet pulls in parallel at all:
 * `serializeImagePulls: false`). One puller would pull the holder's own sequence, no faster, so
 * there is no setting with one.
 *
 * Every image is assigned to a puller; the holder has no share of its own. Measured on real
 * kubelets (docs/benchmarks.md): the kubelet publishes a pod's container statuses only after it
 * has started every container of the pod (one SyncPod), so an image only the holder pulled is seen
 * as present only once the holder has started all of its containers, after its sidecar's own pull.
 *
 * A lane finishes when its last image has started, so the slowest lane sets the warm-up. Bytes are
 * unknown at synth, so the split evens out image counts: with N images over P = L numbered
 * lanes, q = floor(N/P), exactly N mod P lanes pull q+1 images and the others q (max - min <= 1;
 * a pool of fewer than P images gets one puller per image).
 *
 * Which image goes where: images are placed in a fixed order (by a hash of the image), each on the
 * lane it ranks highest (rendezvous hashing: the highest hash of (image, lane)) among the lanes that
 * still have room for it, where a lane has room below q images, or at q while fewer than N mod P
 * lanes hold q+1. Without the room rule this is plain rendezvous, which moves no other image when
 * one is added but was measured far too uneven (5 images over 3 lanes: 4, 1 and none). With it,
 * adding or removing one image usually changes one or two pullers, but can cascade: an image that
 * finds its lane full goes to its next choice, which may push a later one on. No split that is a
 * pure function of the image set was found that keeps both max - min <= 1 and a constant bound;
 * the evenness is exact and the cascade is measured (test/synth/lanes.test.ts, the README).
 *
 * Lane numbers are stable identities: a lane whose images do not change keeps its name and its
 * pod template, so only changed lanes roll. Pure and deterministic.
 */
import { createHash } from 'node:crypto';
import type { ImageRef } from '../oci/reference.js';
import { compareStrings } from '../contract/order.js';

/** One burst puller: its lane number and its images, never empty. */
export interface PullerLane {
  /** `1`..`L`: the lane's number, the stable part of its DaemonSet's name. */
  readonly key: string;
  readonly images: readonly ImageRef[];
}

/** The first 48 bits of SHA-256 of `text`: exact in a double. */
function hash48(text: string): number {
  return createHash('sha256').update(text).digest().readUIntBE(0, 6);
}

/** The pool's burst pullers for `lanes` lanes (none for one lane), sorted by lane number. */
export function pullerLanes(images: readonly ImageRef[], lanes: number): PullerLane[] {
  if (!Number.isInteger(lanes) || lanes < 1) throw new Error(`lanes must be a positive integer, got ${lanes}`);
  const count = lanes === 1 ? 0 : lanes;
  if (count === 0 || images.length === 0) return [];
  const q = Math.floor(images.length / count);
  const r = images.length % count;
  // Ties of 2^-48 are broken by the canonical reference, so the order never depends on the input's.
  const order = images
    .map((image) => ({ image, rank: hash48(image.canonical) }))
    .sort((a, b) => a.rank - b.rank || compareStrings(a.image.canonical, b.image.canonical));
  const out: ImageRef[][] = Array.from({ length: count }, () => []);
  let full = 0; // lanes holding q+1 images
  for (const { image } of order) {
    const choices = out
      .map((_, lane) => ({ lane, weight: hash48(`${image.canonical}\u0000${lane + 1}`) }))
      .sort((a, b) => b.weight - a.weight || a.lane - b.lane);
    // Some lane always has room: fewer than N images are placed, and the rooms add up to N.
    const pick = choices.find(({ lane }) => {
      const held = out[lane]?.length ?? 0;
      return held < q || (held === q && full < r);
    });
    if (pick === undefined) throw new Error('unreachable: no lane has room');
    if ((out[pick.lane]?.length ?? 0) === q) full++;
    out[pick.lane]?.push(image);
  }
  return out.flatMap((l, lane) => (l.length === 0 ? [] : [{ key: String(lane + 1), images: l }]));
}

/**
 * The lane whose puller also pulls the sidecar's image when the pool pulls early: the one with the
 * fewest images (of those, the last), so the holder, which starts only once the node has a
 * network, finds its sidecar's image present along with the pool's. Undefined without pullers.
 */
export function sidecarImageLane(lanes: readonly PullerLane[]): PullerLane | undefined {
  let pick: PullerLane | undefined;
  for (const lane of lanes) if (pick === undefined || lane.images.length <= pick.images.length) pick = lane;
  return pick;
}
