/**
 * Pure part of the moved-tag refresh: which containers may be refreshed, and whether a registry
 * digest means the tag moved.
 *
 * Why restarting the one container is the cheapest correct re-pull:
 * - A tag whose digest did not change costs one HEAD request and zero bytes: we compare the
 *   registry's digest with the running container's imageID before doing anything.
 * - When it moved, the sidecar stops that container's process (shared PID namespace, same UID; no
 *   API call, no extra RBAC). The kubelet restarts it; with `imagePullPolicy: Always` it resolves
 *   the tag again and pulls only the layers it lacks. The other containers keep running, the pod
 *   keeps its name and the node keeps its label.
 * - Deleting our own pod would also work but needs `delete pods` RBAC, re-resolves every image of
 *   the pool, and drops the label until the new pod is warm. Patching the pod's image to
 *   `repo@digest` needs `patch pods`. Both cost more privilege for no gain.
 * - With `IfNotPresent` a restart would not pull (the old image still carries the tag locally),
 *   so such containers are never restarted: that would loop forever without effect.
 */
import { digestOf } from './observe.js';
import type { KPod } from './kube-types.js';

/** A container whose tag can be checked against the registry. */
export interface RefreshCandidate {
  readonly container: string;
  readonly image: string;
  /** Digest of what runs now, from the container's imageID. */
  readonly running: string;
}

/** True for `repo@sha256:…` references: they cannot move. */
export function isDigestPinned(image: string): boolean {
  return image.includes('@');
}

/**
 * Containers of our pod that run a tag under `imagePullPolicy: Always` and report a repo digest.
 * The imageID must be `repo@sha256:…`: a bare `sha256:…` is the runtime's image (config) id,
 * which is not what the registry's manifest digest is compared with.
 */
export function refreshCandidates(pod: KPod, sidecarName: string): { candidates: RefreshCandidate[]; skipped: string[] } {
  const statuses = new Map((pod.status?.containerStatuses ?? []).map((s) => [s.name, s]));
  const candidates: RefreshCandidate[] = [];
  const skipped: string[] = [];
  for (const c of pod.spec?.containers ?? []) {
    if (c.name === sidecarName || !c.image || isDigestPinned(c.image)) continue;
    const s = statuses.get(c.name);
    const running = s?.imageID?.includes('@') ? digestOf(s.imageID) : undefined;
    if (c.imagePullPolicy !== 'Always' || !running) {
      skipped.push(c.name);
      continue;
    }
    candidates.push({ container: c.name, image: c.image, running });
  }
  return { candidates, skipped };
}

/** Delay before the next refresh: the interval plus up to 20% jitter, so nodes do not align. */
export function refreshDelayMs(refreshSeconds: number, random: number): number {
  return Math.round(refreshSeconds * 1000 * (1 + 0.2 * random));
}
