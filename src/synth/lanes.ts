/**
 * Lanes: how a pool's images are split across its burst pullers (docs/architecture.md, Lanes).
 * By bytes when the lock file sizes every image (longest first, to the lightest lane), else evenly
 * by count, each image on its highest rendezvous lane with room. A lane whose images do not change
 * keeps its number and pod template, so only changed lanes roll. Pure and deterministic.
 */
import { createHash } from 'node:crypto';
import type { ImageRef } from '../oci/reference.js';
import { compareStrings } from '../contract/order.js';

/** One burst puller: its lane number and its images, never empty but in {@link SIDECAR_IMAGE_LANE}. */
export interface PullerLane {
  /** `1`..`L`: the lane's number, the stable part of its DaemonSet's name. */
  readonly key: string;
  readonly images: readonly ImageRef[];
  /** The images' compressed bytes, added up: set when the split was by bytes. */
  readonly bytes?: number;
}

/** The first 48 bits of SHA-256 of `text`: exact in a double. */
function hash48(text: string): number {
  return createHash('sha256').update(text).digest().readUIntBE(0, 6);
}

/** Lanes in the order `image` prefers them: the highest rendezvous hash of (image, lane) first. */
function preference(image: ImageRef, count: number): number[] {
  return Array.from({ length: count }, (_, lane) => ({ lane, weight: hash48(`${image.canonical}\u0000${lane + 1}`) }))
    .sort((a, b) => b.weight - a.weight || a.lane - b.lane)
    .map((c) => c.lane);
}

/**
 * The pool's burst pullers for `lanes` lanes (none for one lane), sorted by lane number: split by
 * bytes when `bytes` (compressed bytes by canonical reference) holds every image, else by count.
 */
export function pullerLanes(images: readonly ImageRef[], lanes: number, bytes?: ReadonlyMap<string, number>): PullerLane[] {
  if (!Number.isInteger(lanes) || lanes < 1) throw new Error(`lanes must be a positive integer, got ${lanes}`);
  const count = lanes === 1 ? 0 : lanes;
  if (count === 0 || images.length === 0) return [];
  if (bytes !== undefined && images.every((i) => bytes.has(i.canonical))) return byBytes(images, count, bytes);
  return byCount(images, count);
}

/** Longest-processing-time first over `count` lanes, ties by rendezvous hash (see the file's comment). */
function byBytes(images: readonly ImageRef[], count: number, bytes: ReadonlyMap<string, number>): PullerLane[] {
  const size = (i: ImageRef): number => bytes.get(i.canonical) ?? 0;
  const order = images
    .map((image) => ({ image, size: size(image), rank: hash48(image.canonical) }))
    .sort((a, b) => b.size - a.size || a.rank - b.rank || compareStrings(a.image.canonical, b.image.canonical));
  const used = Math.min(count, images.length);
  const load: number[] = Array.from({ length: count }, () => 0);
  const held: number[] = Array.from({ length: count }, () => 0);
  const out: ImageRef[][] = Array.from({ length: count }, () => []);
  for (const { image, size: s } of order) {
    // Until `used` lanes hold an image, every image lands on an empty lane first.
    const open = held.filter((h) => h > 0).length < used;
    let pick = -1;
    for (const lane of preference(image, count)) {
      if (open && held[lane] !== 0) continue;
      if (pick === -1 || (load[lane] as number) < (load[pick] as number)) pick = lane;
    }
    out[pick]?.push(image);
    load[pick] = (load[pick] as number) + s;
    held[pick] = (held[pick] as number) + 1;
  }
  return out.flatMap((l, lane) => (l.length === 0 ? [] : [{ key: String(lane + 1), images: l, bytes: load[lane] as number }]));
}

/** The even split by image count, placed by rendezvous hashing with room (see the file's comment). */
function byCount(images: readonly ImageRef[], count: number): PullerLane[] {
  const q = Math.floor(images.length / count);
  const r = images.length % count;
  // Ties of 2^-48 are broken by the canonical reference, so the order never depends on the input's.
  const order = images
    .map((image) => ({ image, rank: hash48(image.canonical) }))
    .sort((a, b) => a.rank - b.rank || compareStrings(a.image.canonical, b.image.canonical));
  const out: ImageRef[][] = Array.from({ length: count }, () => []);
  let full = 0; // lanes holding q+1 images
  for (const { image } of order) {
    const pick = preference(image, count).find((lane) => {
      const held = out[lane]?.length ?? 0;
      return held < q || (held === q && full < r);
    });
    if (pick === undefined) throw new Error('unreachable: no lane has room');
    if ((out[pick]?.length ?? 0) === q) full++;
    out[pick]?.push(image);
  }
  return out.flatMap((l, lane) => (l.length === 0 ? [] : [{ key: String(lane + 1), images: l }]));
}

/**
 * The lane key of an early pool's extra puller, which pulls only the sidecar's image: `0`, beside
 * the pool's `1`..`L`, so its DaemonSet and selector names are no longer than theirs.
 */
export const SIDECAR_IMAGE_LANE = '0';

/** The early puller of the sidecar's image: a lane of no pool image. */
export const SIDECAR_IMAGE_PULLER: PullerLane = Object.freeze({ key: SIDECAR_IMAGE_LANE, images: [] });
