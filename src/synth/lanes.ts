/**
 * Lanes: how a pool's images are split across the burst pullers that pull them in parallel while
 * a node warms (docs/architecture.md, lanes). Every image goes to a puller, and the holder keeps a
 * share of none. Bytes are unknown at synth, so the split evens out image counts: with N images
 * over L lanes, q = floor(N/L), exactly N mod L lanes pull q+1 images and the others q.
 *
 * Which image goes where: images are placed in a fixed order (by a hash of the image), each on the
 * lane it ranks highest (rendezvous hashing) among the lanes that still have room, where a lane has
 * room below q images, or at q while fewer than N mod L lanes hold q+1. Plain rendezvous would move
 * no other image when one is added, but is uneven; with the room rule the split is exact, and an
 * image that finds its lane full may push a later one on (`npm run bench:lanes` measures how far).
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
