/**
 * The images a pool's pods pin, matched against `node.status.images` as the kubelet reports it
 * (capped, largest first, each under all its names), so doctor and the sidecar read the list alike.
 */
import { parseImageID } from './digest.js';
import { compareStrings } from './order.js';
import type { Container, ContainerStatus, Opt, Pod } from './pod-status.js';

/** One entry of `node.status.images`. */
export interface NodeImage {
  readonly names?: Opt<readonly string[]>;
  readonly sizeBytes?: Opt<number>;
}

/** The largest size believed for one blob or one image (1 PiB): anything larger is a lie. */
export const MAX_IMAGE_BYTES = 2 ** 50;

/** One image the pods pin, with the names the node's list may show it by. */
export interface PinnedImage {
  /** As `key` made it from the pod spec's name. */
  readonly ref: string;
  readonly names: readonly string[];
  /** The runtime created a container of it, so it is on the node. */
  readonly onNode: boolean;
}

/** A size from the node's list when it is one: a whole number of bytes up to {@link MAX_IMAGE_BYTES}. */
export function believedSize(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= MAX_IMAGE_BYTES ? v : undefined;
}

/** Every image of the pods, init containers too (image GC counts an exited one in use), sorted by `ref`. */
export function podImages(pods: readonly Pod[], key: (image: string) => string = (image) => image): PinnedImage[] {
  const byRef = new Map<string, { names: Set<string>; onNode: boolean }>();
  for (const pod of pods) {
    const statuses: readonly ContainerStatus[] = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
    const containers: readonly Container[] = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
    for (const c of containers) {
      if (!c.image) continue;
      const ref = key(c.image);
      const s = statuses.find((x) => x.name === c.name);
      const entry = byRef.get(ref) ?? { names: new Set([c.image, ref]), onNode: false };
      if (s?.image) entry.names.add(s.image);
      // The repo digest of a pulled image is a name the node lists it by, whatever the tag.
      const repoDigest = parseImageID(s?.imageID)?.repoDigest;
      if (repoDigest !== undefined) entry.names.add(repoDigest);
      if (s?.imageID) entry.onNode = true;
      byRef.set(ref, entry);
    }
  }
  return [...byRef.keys()].sort(compareStrings).map((ref) => {
    const e = byRef.get(ref) as { names: Set<string>; onNode: boolean };
    return { ref, names: [...e.names].sort(), onNode: e.onNode };
  });
}

/** The images the node lists (two names of one image count once), with their sizes, and the rest. */
export function matchImages(
  images: readonly PinnedImage[],
  list: readonly NodeImage[],
): { listed: Map<number, number>; unlisted: PinnedImage[] } {
  const index = new Map<string, number>();
  list.forEach((e, i) => {
    for (const n of e.names ?? []) if (!index.has(n)) index.set(n, i);
  });
  const listed = new Map<number, number>();
  const unlisted: PinnedImage[] = [];
  for (const image of images) {
    const i = image.names.map((n) => index.get(n)).find((x) => x !== undefined);
    const size = i === undefined ? undefined : believedSize(list[i]?.sizeBytes);
    if (i !== undefined && size !== undefined) listed.set(i, size);
    else unlisted.push(image);
  }
  return { listed, unlisted };
}

/** The bytes one pool's pod pins, as the node's list states them; a lower bound when not `complete`. */
export function podPinnedBytes(pod: Pod, list: readonly NodeImage[]): { bytes: number; complete: boolean } {
  const { listed, unlisted } = matchImages(podImages([pod]), list);
  return { bytes: [...listed.values()].reduce((a, b) => a + b, 0), complete: unlisted.length === 0 };
}
