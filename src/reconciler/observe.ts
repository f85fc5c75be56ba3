/**
 * Observation: what the sidecar sees of its pool's images, read from the container statuses of
 * its own pod and of the pool's burst pullers on its node. Pure: the kubelet's words (waiting
 * reasons, imageID, start times), judged by the contract (src/contract/pod-status.ts), become one
 * {@link ImageObservation} per image, which the pool decision (pool.ts) counts.
 */
import { parseImageID } from '../contract/digest.js';
import {
  allStatuses,
  imageContainers,
  imagePresent,
  pullFailure,
  startedAt,
  type Container,
  type ContainerStatus,
} from '../contract/pod-status.js';
import type { KPod } from './kube-types.js';

/** Kubelet messages are cut to this many characters. */
export const MAX_MESSAGE_CHARS = 200;

/** Where an image of the pool stands on this node. */
export type ImagePhase = 'present' | 'pending' | 'failing';

/** One cached image as observed through its container's status. */
export interface ImageObservation {
  readonly container: string;
  readonly image: string;
  readonly phase: ImagePhase;
  /** Digest from the container's imageID, when the runtime reported one. */
  readonly digest?: string;
  /** The kubelet's waiting reason (failing or pending). */
  readonly reason?: string;
  readonly message?: string;
  /** When the container first started, as far as the status still tells (ms since epoch). */
  readonly presentSince?: number;
}

function cut(s: string | undefined, n: number): string | undefined {
  if (s === undefined || s === '') return undefined;
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/**
 * Classifies one image container: present when its image is on the node (contract
 * `imagePresent`), failing when the kubelet reports a pull failure, else pending.
 */
export function classifyContainer(image: string, st: ContainerStatus | undefined): ImageObservation {
  const name = st?.name ?? '';
  const digest = parseImageID(st?.imageID)?.digest;
  const since = startedAt(st);
  const waiting = st?.state?.waiting;
  const base = { container: name, image, ...(digest ? { digest } : {}), ...(since !== undefined ? { presentSince: since } : {}) };
  if (imagePresent(st)) return { ...base, phase: 'present' };
  const reason = waiting?.reason;
  const message = cut(waiting?.message, MAX_MESSAGE_CHARS);
  const detail = { ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
  if (pullFailure(st) !== undefined) return { ...base, phase: 'failing', ...detail };
  return { ...base, phase: 'pending', ...detail };
}

/**
 * The pool's images as seen in its own pod: its image containers (contract `imageContainers`).
 * Plain init containers (the busybox copy) are not cached images, but when one of them cannot be
 * pulled nothing else ever starts, so it is reported as a blocker.
 */
export function observeImages(pod: KPod): { images: ImageObservation[]; blockers: ImageObservation[] } {
  const statuses = new Map(allStatuses(pod).map((s) => [s.name, s]));
  const observe = (c: Container): ImageObservation => ({ ...classifyContainer(c.image ?? '', statuses.get(c.name)), container: c.name });
  const images = imageContainers(pod.spec).map(observe);
  const plainInits = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy !== 'Always');
  return { images, blockers: plainInits.map(observe).filter((o) => o.phase === 'failing') };
}

/**
 * The tag of `image`, which may carry a digest the sidecar set (`repo:tag@sha256:…`), or undefined
 * when it names no tag (`repo@sha256:…`, or `repo` alone, which the registry reads as `latest`).
 */
export function tagOf(image: string): string | undefined {
  const [named = ''] = image.split('@');
  const lastPart = named.slice(named.lastIndexOf('/') + 1);
  return lastPart.includes(':') ? named : undefined;
}

/** How far an image has come, for the merge: a start anywhere beats a failure, which beats waiting. */
const PHASE_RANK: Readonly<Record<ImagePhase, number>> = { present: 2, failing: 1, pending: 0 };

/**
 * The holder's images (`own`, every image of the pool) merged with what the pool's other pods on
 * the node (burst pullers) show of the same images, by image reference. Present wins: a container
 * of the image started in any pod, so the image is on the node (the earliest start is kept, as
 * time-to-warm counts from it). Otherwise a failure in any lane is kept with its reason, since the
 * holder would hit the same one when it reaches the image. The holder's container name is kept:
 * the annotation and the refresh name the holder's containers. Images only a puller shows are not
 * the pool's (a puller of an older template) and are left out.
 */
export function mergeObservations(own: readonly ImageObservation[], others: readonly (readonly ImageObservation[])[]): ImageObservation[] {
  const best = new Map<string, ImageObservation>();
  for (const o of others.flat()) {
    const seen = best.get(o.image);
    if (seen === undefined || better(o, seen)) best.set(o.image, o);
  }
  return own.map((mine) => {
    const other = best.get(mine.image);
    if (other === undefined || !better(other, mine)) return mine;
    return {
      ...other,
      container: mine.container,
      ...(mine.digest !== undefined && other.digest === undefined ? { digest: mine.digest } : {}),
    };
  });
}

/** Whether `a` tells more about its image than `b`: a higher phase, or an earlier start. */
function better(a: ImageObservation, b: ImageObservation): boolean {
  if (PHASE_RANK[a.phase] !== PHASE_RANK[b.phase]) return PHASE_RANK[a.phase] > PHASE_RANK[b.phase];
  if (a.phase !== 'present') return false;
  return a.presentSince !== undefined && (b.presentSince === undefined || a.presentSince < b.presentSince);
}
