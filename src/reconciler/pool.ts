/**
 * Phase 1 of a reconcile: observed state to our own label, annotation and Event; pure, no memory
 * between calls. Phase 2 (gate.ts) decides the gate on the node our write returned.
 */
import { ANNOTATION_VERSION, parseAnnotation, renderAnnotation, type FailingImage, type PoolAnnotation } from '../contract/annotation.js';
import { NodeState } from '../contract/names.js';
import { conditionTrueSince, PULL_FAILURE_REASONS, timeOf } from '../contract/pod-status.js';
import type { PoolsFile } from '../contract/pools-file.js';
import type { ReconcilerConfig } from '../contract/sidecar-env.js';
import type { KNode, KPod } from './kube-types.js';
import { mergeObservations, observeImages, type ImageObservation } from './observe.js';
import { matchImages } from '../contract/node-images.js';
import { partialEvent, pullFailingEvent, warmEvent, type EventIntent } from '../contract/events.js';
import { compareStrings } from '../contract/order.js';

/** Everything observed for one reconcile. */
export interface Observed {
  readonly pod: KPod;
  readonly node: KNode;
  readonly pools: PoolsFile;
  readonly config: ReconcilerConfig;
  /** ms since epoch. */
  readonly now: number;
  /** SIGTERM received or deletionTimestamp observed: remove what we own and stop. */
  readonly terminating?: boolean;
  /** Never counted as an image. */
  readonly sidecarName: string;
  /** The pool's other pods on this node: an image counts once a container of it started in any. @default - none */
  readonly peers?: readonly KPod[];
}

/** Our pool's state on this node, for metrics and logs. */
export type PoolState = 'warming' | NodeState;

/** Phase 1 output: our own label and annotation. */
export interface PoolDecision {
  readonly state: PoolState | 'terminating';
  /** New label value (null = remove); undefined = already as desired, write nothing. */
  readonly label?: string | null;
  /** New annotation value (null = remove); undefined = already as desired. */
  readonly annotation?: string | null;
  /** At most one. */
  readonly events: readonly EventIntent[];
  /** Set once, on the transition to warm: the time-to-warm to observe in the histogram. */
  readonly timeToWarmSeconds?: number;
  readonly images: readonly ImageObservation[];
  /** When the pool's deadline passes (ms), while still warming. */
  readonly deadlineAt: number;
  /** {@link releasesImages}. */
  readonly releaseImages: boolean;
}

/** When the node's Ready condition last turned True (ms), if it is True now. */
export function nodeReadyAt(node: KNode): number | undefined {
  return conditionTrueSince(node.status?.conditions, 'Ready');
}

/** Origin of the deadline: the later of node Ready and pod creation, so a new pool gets its full deadline. */
export function warmOrigin(pod: KPod, node: KNode, now: number): number {
  const ready = nodeReadyAt(node) ?? timeOf(node.metadata.creationTimestamp) ?? now;
  const created = timeOf(pod.metadata.creationTimestamp) ?? ready;
  return Math.max(ready, created);
}

/**
 * Failure entries, ErrImagePull and ImagePullBackOff folded into one (the kubelet alternates); the
 * previous real message is kept over the back-off's empty one.
 */
function failures(list: readonly ImageObservation[], prev: PoolAnnotation | undefined): FailingImage[] {
  const prevMsg = new Map((prev?.failing ?? []).map((f) => [`${f.image}\u0000${f.reason}`, f.message]));
  const prevFailure = new Map((prev?.failing ?? []).filter((f) => PULL_FAILURE_REASONS.has(f.reason)).map((f) => [f.image, f]));
  return list
    .map((o): FailingImage => {
      const kept = o.phase === 'pending' ? prevFailure.get(o.image) : undefined;
      if (kept !== undefined) return kept;
      const reason = o.reason === 'ImagePullBackOff' ? 'ErrImagePull' : (o.reason ?? 'Pending');
      const message = o.reason === 'ImagePullBackOff' ? (prevMsg.get(`${o.image}\u0000${reason}`) ?? o.message) : o.message;
      return { image: o.image, reason, ...(message ? { message } : {}) };
    })
    .sort((a, b) => compareStrings(a.image, b.image));
}

function describeFailing(list: readonly FailingImage[]): string {
  return list.map((f) => `${f.image}: ${f.reason}${f.message ? ` (${f.message})` : ''}`).join('; ');
}

const round1 = (x: number): number => Math.round(x * 10) / 10;

/** What one of the pool's other pods on the node shows: {@link observeImages}, and whether it still runs or will. */
type PeerObservation = ReturnType<typeof observeImages> & { readonly live: boolean };

const live = (p: KPod): boolean => !p.metadata.deletionTimestamp && p.status?.phase !== 'Failed' && p.status?.phase !== 'Succeeded';

/** The startup probe: not while burst pullers cover every missing image (docs/architecture.md). */
export function releasesImages(
  state: PoolState | 'terminating',
  own: readonly ImageObservation[],
  images: readonly ImageObservation[],
  peers: readonly PeerObservation[],
  node: KNode,
): boolean {
  if (state !== 'warming' || own.some((i) => i.phase === 'present')) return true;
  const missing = new Set(images.filter((i) => i.phase !== 'present').map((i) => i.image));
  // By the name the pod gives it and, for `repo:tag@digest`, by `repo@digest`: how the runtime lists a pulled digest.
  const wanted = [...missing].map((ref) => ({ ref, names: [ref, ref.replace(/:[^/@]+@/, '@')], onNode: false }));
  if (matchImages(wanted, node.status?.images ?? []).unlisted.length === 0) return true;
  const seen = peers.filter((p) => p.live);
  if (images.some((i) => i.phase === 'failing') || seen.some((o) => o.blockers.length > 0)) return true;
  const covered = new Set(seen.flatMap((o) => o.images).map((i) => i.image));
  return [...missing].some((image) => !covered.has(image));
}

/** What decidePool knows when it writes a state's annotation and Events. */
interface RecordInput {
  readonly config: ReconcilerConfig;
  /** As the previous reconcile of this pod wrote it. */
  readonly own: PoolAnnotation | undefined;
  readonly curLabel: string | undefined;
  readonly origin: number;
  readonly now: number;
  readonly images: readonly ImageObservation[];
  readonly present: readonly ImageObservation[];
  readonly blockers: readonly ImageObservation[];
  readonly digests: Record<string, string>;
}

/** A state's annotation, the Events announcing it (none when already announced), and its time to warm. */
interface StateRecord {
  readonly ann: PoolAnnotation | undefined;
  readonly events: EventIntent[];
  readonly timeToWarmSeconds: number | undefined;
}

/** The annotation and Events of a warm, partial or warming node. */
function recordOf(state: PoolState, input: RecordInput): StateRecord {
  const { config, own, curLabel, origin, now, images, present, blockers, digests } = input;
  let ann: PoolAnnotation | undefined;
  let events: EventIntent[] = [];
  let timeToWarmSeconds: number | undefined;
  if (state === NodeState.Warm) {
    const reuse = own?.state === NodeState.Warm && own.warmAt !== undefined && own.ttwSeconds !== undefined;
    const lastStart = Math.max(origin, ...present.map((i) => i.presentSince ?? origin));
    const warmAt = reuse ? own.warmAt : new Date(Math.min(lastStart, now)).toISOString();
    const ttw = reuse ? own.ttwSeconds : round1(Math.max(0, Date.parse(warmAt) - origin) / 1000);
    ann = { v: ANNOTATION_VERSION, pod: config.podName, state, images: images.length, warmAt, ttwSeconds: ttw, digests };
    if (!(own?.state === NodeState.Warm && curLabel === NodeState.Warm)) {
      timeToWarmSeconds = ttw;
      events = [warmEvent(config.poolId, images.length, ttw)];
    }
  } else {
    const failing = failures([...blockers, ...images.filter((i) => i.phase === 'failing')], own);
    if (state === NodeState.Partial) {
      const missing = failures([...blockers, ...images.filter((i) => i.phase !== 'present')], own);
      ann = {
        v: ANNOTATION_VERSION,
        pod: config.podName,
        state,
        images: images.length,
        present: present.length,
        digests,
        failing: missing,
      };
      if (!(own?.state === NodeState.Partial && curLabel === NodeState.Partial)) {
        events = [
          partialEvent(config.poolId, config.deadlineSeconds, images.length - present.length, images.length, describeFailing(missing)),
        ];
      }
    } else if (failing.length) {
      ann = { v: ANNOTATION_VERSION, pod: config.podName, state, images: images.length, failing };
      // Compare what the annotation can hold (capped list + count), or every reconcile would re-announce.
      const key = (a: PoolAnnotation | undefined): string =>
        `${(a?.failing ?? []).map((f) => `${f.image}\u0000${f.reason}`).join('\u0001')}\u0002${a?.failingOmitted ?? 0}`;
      if (key(parseAnnotation(renderAnnotation(ann))) !== key(own?.state === 'warming' ? own : undefined)) {
        events = [pullFailingEvent(config.poolId, describeFailing(failing))];
      }
    }
  }
  return { ann, events, timeToWarmSeconds };
}

/**
 * Phase 1: our pool's label and annotation. Monotone for one pod; "partial" is sticky because a
 * flapping node moves the deadline's origin. What a previous pod wrote is recomputed from scratch.
 */
export function decidePool(obs: Observed): PoolDecision {
  const { pod, node, config, now } = obs;
  const labels = node.metadata.labels ?? {};
  const annotations = node.metadata.annotations ?? {};
  const curLabel = labels[config.nodeLabelKey];
  const curAnnText = annotations[config.nodeAnnotationKey];
  const prev = parseAnnotation(curAnnText);
  const own = prev?.pod === config.podName ? prev : undefined;
  const origin = warmOrigin(pod, node, now);
  const deadlineAt = origin + config.deadlineSeconds * 1000;
  const observed = observeImages(pod);
  const { blockers } = observed;
  const peers = (obs.peers ?? []).map((p) => ({ live: live(p), ...observeImages(p) }));
  const images = mergeObservations(
    observed.images,
    peers.map((p) => p.images),
  );

  const change = (want: string | null, cur: string | undefined): string | null | undefined =>
    (want ?? undefined) === cur ? undefined : want;

  if (obs.terminating || pod.metadata.deletionTimestamp) {
    return {
      state: 'terminating',
      ...(curLabel !== undefined ? { label: null } : {}),
      ...(curAnnText !== undefined ? { annotation: null } : {}),
      events: [],
      images,
      deadlineAt,
      releaseImages: true,
    };
  }

  const present = images.filter((i) => i.phase === 'present');
  // Warm is sticky for one pod: once the pullers leave, the holder may still report images waiting.
  const allPresent = present.length === images.length;
  if (!allPresent && own?.state === NodeState.Warm && curLabel === NodeState.Warm)
    return { state: NodeState.Warm, events: [], images, deadlineAt, releaseImages: true };
  const pastDeadline = now >= deadlineAt || own?.state === NodeState.Partial || own?.state === NodeState.Warm;
  const state: PoolState = allPresent ? NodeState.Warm : pastDeadline ? NodeState.Partial : 'warming';

  const digests = Object.fromEntries(present.flatMap((i) => (i.digest ? [[i.image, i.digest] as const] : [])));
  const { ann, events, timeToWarmSeconds } = recordOf(state, { config, own, curLabel, origin, now, images, present, blockers, digests });

  const wantLabel = state === 'warming' ? null : state;
  const wantAnn = ann ? renderAnnotation(ann) : null;
  const label = change(wantLabel, curLabel);
  const annotation = change(wantAnn, curAnnText);
  return {
    state,
    ...(label !== undefined ? { label } : {}),
    ...(annotation !== undefined ? { annotation } : {}),
    events,
    ...(timeToWarmSeconds !== undefined ? { timeToWarmSeconds } : {}),
    images,
    deadlineAt,
    releaseImages: releasesImages(state, observed.images, images, peers, node),
  };
}
