/** What the sidecar sees of its pool's images, from the statuses of its pod and the pullers'. Pure. */
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

export interface ImageObservation {
  readonly container: string;
  readonly image: string;
  readonly phase: ImagePhase;
  /** Digest from the container's imageID, when the runtime reported one. */
  readonly digest?: string;
  readonly reason?: string;
  readonly message?: string;
  /** When the container first started, as far as the status still tells (ms since epoch). */
  readonly presentSince?: number;
}

function cut(s: string | undefined, n: number): string | undefined {
  if (s === undefined || s === '') return undefined;
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** Present when its image is on the node, failing on a pull failure, else pending. */
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
 * The pool's images as seen in its own pod. An init container that cannot be pulled is reported
 * too: nothing else ever starts behind it.
 */
export function observeImages(pod: KPod): { images: ImageObservation[]; blockers: ImageObservation[] } {
  const statuses = new Map(allStatuses(pod).map((s) => [s.name, s]));
  const observe = (c: Container): ImageObservation => ({ ...classifyContainer(c.image ?? '', statuses.get(c.name)), container: c.name });
  const images = imageContainers(pod.spec).map(observe);
  const plainInits = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy !== 'Always');
  return { images, blockers: plainInits.map(observe).filter((o) => o.phase === 'failing') };
}

/** The tag of `image` (which may carry a digest the sidecar set), or undefined when it names none. */
export function tagOf(image: string): string | undefined {
  const [named = ''] = image.split('@');
  const lastPart = named.slice(named.lastIndexOf('/') + 1);
  return lastPart.includes(':') ? named : undefined;
}

/** How far an image has come, for the merge: a start anywhere beats a failure, which beats waiting. */
const PHASE_RANK: Readonly<Record<ImagePhase, number>> = { present: 2, failing: 1, pending: 0 };

/**
 * The holder's images merged with what the pullers show of them: present wins (earliest start
 * kept), then a failure in any lane, which the holder would hit too. Images only a puller shows
 * (an older template) are left out.
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
