/**
 * The sidecar's decision core: pure functions from observed state (own pod, own node, pools.json,
 * configuration, the time) to intended changes. No I/O, no clock reads, no memory between calls:
 * everything that must survive a restart is read back from the node (its labels and our
 * annotation), so a restarted sidecar reaches the same decision as the one that died
 * (style rule 7, "react to state, not to events").
 *
 * A reconcile runs in two phases because of a race between sidecars of different pools on one
 * node (see {@link decideGate}): phase 1 ({@link decidePool}) decides our own label and
 * annotation; the controller writes them and phase 2 decides the gate on the node returned by that
 * write.
 */
import { placementSelectsNode } from '../contract/placement.js';
import type { PoolsFile } from '../contract/pools-file.js';
import { DEFAULTS, NodeState } from '../wellknown.js';
import type { ReconcilerConfig } from './config.js';
import type { KContainerState, KContainerStatus, KNode, KPod } from './kube-types.js';
import { EventReason, GateOutcome, POST_PULL_REASONS, PULL_FAILURE_REASONS } from './reasons.js';

/** Version of the annotation's JSON schema. */
export const ANNOTATION_VERSION = 1;
/** Upper bound of the annotation's serialized size (the apiserver allows 256 KiB for all). */
export const ANNOTATION_MAX_BYTES = 4096;
/** At most this many failing images are listed by name; the rest are counted. */
export const MAX_FAILING_LISTED = 10;
/** Kubelet messages are cut to this many characters. */
export const MAX_MESSAGE_CHARS = 200;
/** Upper bound of an Event message (the apiserver truncates at 1 KiB in events.k8s.io). */
export const MAX_EVENT_MESSAGE_CHARS = 1000;

/**
 * Extra time, past the longest deadline of the pools gating a node, before any sidecar on that
 * node removes the taint regardless of the other pools. It is counted from the node's
 * creationTimestamp (immutable), not from Ready (which moves when the node flaps), and has to
 * cover the boot-to-Ready time that the per-pool deadlines (counted from Ready) do not.
 */
export const ABSOLUTE_GRACE_SECONDS = 600;

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

/** One failing (or, past the deadline, missing) image in the annotation. */
export interface FailingImage {
  readonly image: string;
  readonly reason: string;
  readonly message?: string;
}

/** The JSON stored in the per-pool node annotation. Bounded by {@link ANNOTATION_MAX_BYTES}. */
export interface PoolAnnotation {
  readonly v: number;
  /** The pod that wrote it; a different name means the data is stale (previous pod). */
  readonly pod: string;
  readonly state: 'warming' | NodeState;
  readonly images: number;
  readonly present?: number;
  readonly warmAt?: string;
  readonly ttwSeconds?: number;
  /** Image reference → digest of what is running. */
  readonly digests?: Readonly<Record<string, string>>;
  readonly digestsOmitted?: number;
  readonly failing?: readonly FailingImage[];
  readonly failingOmitted?: number;
}

/** An Event the controller should post about the node. */
export interface EventIntent {
  readonly reason: EventReason;
  readonly message: string;
}

/** Everything observed for one reconcile. */
export interface Observed {
  readonly pod: KPod;
  readonly node: KNode;
  readonly pools: PoolsFile;
  readonly config: ReconcilerConfig;
  /** ms since epoch from the Clock port. */
  readonly now: number;
  /** SIGTERM received or deletionTimestamp observed: remove what we own and stop. */
  readonly terminating?: boolean;
  /** Name of the sidecar container, never counted as an image. */
  readonly sidecarName: string;
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
  /** Events of this phase (at most one). */
  readonly events: readonly EventIntent[];
  /** Set once, on the transition to warm: the time-to-warm to observe in the histogram. */
  readonly timeToWarmSeconds?: number;
  readonly images: readonly ImageObservation[];
  /** When the pool's deadline passes (ms), while still warming. */
  readonly deadlineAt: number;
}

/** Phase 2 output: what to do with the gating taint. */
export interface GateDecision {
  /** Remove every taint with this key. */
  readonly removeTaintKey?: string;
  readonly outcome?: GateOutcome;
  /** Pools selecting the node, with this gate key, that are neither warm nor partial. */
  readonly waitingFor: readonly string[];
  /** Absolute bound (ms) while the taint is still there and we wait. */
  readonly forceAt?: number;
}

function ms(ts: string | undefined): number | undefined {
  if (ts === undefined) return undefined;
  const t = Date.parse(ts);
  return Number.isNaN(t) ? undefined : t;
}

function startedAt(s: KContainerState | undefined): number | undefined {
  return ms(s?.running?.startedAt) ?? ms(s?.terminated?.startedAt);
}

/** `repo@sha256:…` or `sha256:…` → `sha256:…`; anything else is not a digest. */
export function digestOf(imageID: string | undefined): string | undefined {
  if (!imageID) return undefined;
  const m = /(sha256:[0-9a-f]{64})$/.exec(imageID);
  return m?.[1];
}

function cut(s: string | undefined, n: number): string | undefined {
  if (s === undefined || s === '') return undefined;
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/**
 * Classifies one image container. Present means the image is on the node: the container runs, or
 * ran (current or last state shows a start), or the runtime reported its imageID, or the kubelet
 * stopped at a step that only comes after a successful pull (crash after pull counts).
 */
export function classifyContainer(image: string, st: KContainerStatus | undefined): ImageObservation {
  const name = st?.name ?? '';
  const digest = digestOf(st?.imageID);
  const since = startedAt(st?.state) ?? startedAt(st?.lastState);
  const ran = Boolean(st?.state?.running || st?.state?.terminated || st?.lastState?.running || st?.lastState?.terminated);
  const waiting = st?.state?.waiting;
  const base = { container: name, image, ...(digest ? { digest } : {}), ...(since !== undefined ? { presentSince: since } : {}) };
  if (ran || digest || (st?.imageID ?? '') !== '' || (waiting?.reason && POST_PULL_REASONS.has(waiting.reason))) {
    return { ...base, phase: 'present' };
  }
  const reason = waiting?.reason;
  const message = cut(waiting?.message, MAX_MESSAGE_CHARS);
  const detail = { ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
  if (reason && PULL_FAILURE_REASONS.has(reason)) return { ...base, phase: 'failing', ...detail };
  return { ...base, phase: 'pending', ...detail };
}

/**
 * The pool's images as seen in its own pod: every regular container and every restartable init
 * container except the sidecar. Plain init containers (the busybox copy) are not cached images,
 * but when one of them cannot be pulled nothing else ever starts, so it is reported as failing.
 */
export function observeImages(pod: KPod, sidecarName: string): { images: ImageObservation[]; blockers: ImageObservation[] } {
  const statuses = new Map<string, KContainerStatus>();
  for (const s of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) statuses.set(s.name, s);
  const images: ImageObservation[] = [];
  const blockers: ImageObservation[] = [];
  for (const c of pod.spec?.initContainers ?? []) {
    if (c.name === sidecarName) continue;
    const o = { ...classifyContainer(c.image ?? '', statuses.get(c.name)), container: c.name };
    if (c.restartPolicy === 'Always') images.push(o);
    else if (o.phase === 'failing') blockers.push(o);
  }
  for (const c of pod.spec?.containers ?? []) {
    if (c.name === sidecarName) continue;
    images.push({ ...classifyContainer(c.image ?? '', statuses.get(c.name)), container: c.name });
  }
  return { images, blockers };
}

/** When the node's Ready condition last turned True (ms), if it is True now. */
export function nodeReadyAt(node: KNode): number | undefined {
  const c = node.status?.conditions?.find((x) => x.type === 'Ready');
  return c?.status === 'True' ? ms(c.lastTransitionTime) : undefined;
}

/**
 * Origin of the deadline and of time-to-warm: the later of node Ready and pod creation. On a new
 * node the DaemonSet creates the pod before the node is Ready, so this is node Ready (what the
 * brief means by "600 s from node Ready"); for a pool that newly selects an old node it is the
 * pod's creation, so the pool gets its full deadline instead of being partial at once.
 */
export function warmOrigin(pod: KPod, node: KNode, now: number): number {
  const ready = nodeReadyAt(node) ?? ms(node.metadata.creationTimestamp) ?? now;
  const created = ms(pod.metadata.creationTimestamp) ?? ready;
  return Math.max(ready, created);
}

/** Parses our annotation; anything unreadable is treated as absent (and rewritten). */
export function parseAnnotation(text: string | undefined): PoolAnnotation | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as PoolAnnotation;
    return typeof v === 'object' && v !== null && v.v === ANNOTATION_VERSION && typeof v.pod === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Failure entries, with ErrImagePull and ImagePullBackOff folded into one reason: the kubelet
 * alternates between them and we must not rewrite the annotation on every flip. The back-off
 * message ("Back-off pulling image …") says nothing, so the last real message is kept from the
 * previous annotation when we have one.
 */
function failures(list: readonly ImageObservation[], prev: PoolAnnotation | undefined): FailingImage[] {
  const prevMsg = new Map((prev?.failing ?? []).map((f) => [`${f.image}\u0000${f.reason}`, f.message]));
  return list
    .map((o): FailingImage => {
      const reason = o.reason === 'ImagePullBackOff' ? 'ErrImagePull' : (o.reason ?? 'Pending');
      const message = o.reason === 'ImagePullBackOff' ? (prevMsg.get(`${o.image}\u0000${reason}`) ?? o.message) : o.message;
      return { image: o.image, reason, ...(message ? { message } : {}) };
    })
    .sort((a, b) => (a.image < b.image ? -1 : a.image > b.image ? 1 : 0));
}

/**
 * Serializes an annotation under {@link ANNOTATION_MAX_BYTES}: failing images beyond
 * {@link MAX_FAILING_LISTED} are counted, then digests are dropped from the end, then failing
 * entries, until it fits. Keys are emitted in a fixed order so equal content gives equal text.
 */
export function renderAnnotation(a: PoolAnnotation): string {
  let failing = [...(a.failing ?? [])];
  let failingOmitted = a.failingOmitted ?? 0;
  if (failing.length > MAX_FAILING_LISTED) {
    failingOmitted += failing.length - MAX_FAILING_LISTED;
    failing = failing.slice(0, MAX_FAILING_LISTED);
  }
  let digests = Object.entries(a.digests ?? {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  let digestsOmitted = a.digestsOmitted ?? 0;
  const render = (): string =>
    JSON.stringify({
      v: a.v,
      pod: a.pod,
      state: a.state,
      images: a.images,
      ...(a.present !== undefined ? { present: a.present } : {}),
      ...(a.warmAt !== undefined ? { warmAt: a.warmAt } : {}),
      ...(a.ttwSeconds !== undefined ? { ttwSeconds: a.ttwSeconds } : {}),
      ...(digests.length ? { digests: Object.fromEntries(digests) } : {}),
      ...(digestsOmitted ? { digestsOmitted } : {}),
      ...(failing.length ? { failing } : {}),
      ...(failingOmitted ? { failingOmitted } : {}),
    });
  let text = render();
  while (Buffer.byteLength(text) > ANNOTATION_MAX_BYTES && (digests.length || failing.length)) {
    if (digests.length) {
      const drop = Math.max(1, Math.ceil(digests.length / 4));
      digests = digests.slice(0, digests.length - drop);
      digestsOmitted += drop;
    } else {
      failing = failing.slice(0, failing.length - 1);
      failingOmitted += 1;
    }
    text = render();
  }
  return text;
}

function describeFailing(list: readonly FailingImage[]): string {
  return list.map((f) => `${f.image}: ${f.reason}${f.message ? ` (${f.message})` : ''}`).join('; ');
}

function eventMessage(s: string): string {
  return s.length > MAX_EVENT_MESSAGE_CHARS ? `${s.slice(0, MAX_EVENT_MESSAGE_CHARS - 1)}…` : s;
}

const round1 = (x: number): number => Math.round(x * 10) / 10;

/**
 * Phase 1: our pool's label and annotation.
 *
 * State is monotone for one pod: warming → partial → warm, or warming → warm. "Partial" is sticky
 * (read back from our own annotation), because the deadline's origin can move later when the node
 * flaps NotReady→Ready and a node must not go from partial back to "no label". A label or
 * annotation written by a previous pod (another name) is stale and recomputed from scratch.
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
  const { images, blockers } = observeImages(pod, obs.sidecarName);

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
    };
  }

  const present = images.filter((i) => i.phase === 'present');
  const allPresent = present.length === images.length;
  const pastDeadline = now >= deadlineAt || own?.state === NodeState.Partial || own?.state === NodeState.Warm;
  const state: PoolState = allPresent ? NodeState.Warm : pastDeadline ? NodeState.Partial : 'warming';

  let ann: PoolAnnotation | undefined;
  let events: EventIntent[] = [];
  let timeToWarmSeconds: number | undefined;
  const digests = Object.fromEntries(present.flatMap((i) => (i.digest ? [[i.image, i.digest] as const] : [])));

  if (state === NodeState.Warm) {
    const reuse = own?.state === NodeState.Warm && own.warmAt !== undefined && own.ttwSeconds !== undefined;
    const lastStart = Math.max(origin, ...present.map((i) => i.presentSince ?? origin));
    const warmAt = reuse ? (own.warmAt as string) : new Date(Math.min(lastStart, now)).toISOString();
    const ttw = reuse ? (own.ttwSeconds as number) : round1(Math.max(0, Date.parse(warmAt) - origin) / 1000);
    ann = { v: ANNOTATION_VERSION, pod: config.podName, state, images: images.length, warmAt, ttwSeconds: ttw, digests };
    if (!(own?.state === NodeState.Warm && curLabel === NodeState.Warm)) {
      timeToWarmSeconds = ttw;
      events = [{ reason: EventReason.Warm, message: eventMessage(`pool ${config.poolId}: all ${images.length} images present, time to warm ${ttw}s`) }];
    }
  } else {
    const failing = failures([...blockers, ...images.filter((i) => i.phase === 'failing')], own);
    if (state === NodeState.Partial) {
      const missing = failures([...blockers, ...images.filter((i) => i.phase !== 'present')], own);
      ann = { v: ANNOTATION_VERSION, pod: config.podName, state, images: images.length, present: present.length, digests, failing: missing };
      if (!(own?.state === NodeState.Partial && curLabel === NodeState.Partial)) {
        events = [
          {
            reason: EventReason.Partial,
            message: eventMessage(
              `pool ${config.poolId}: deadline of ${config.deadlineSeconds}s passed with ${images.length - present.length} of ${images.length} images missing: ${describeFailing(missing)}`,
            ),
          },
        ];
      }
    } else if (failing.length) {
      ann = { v: ANNOTATION_VERSION, pod: config.podName, state, images: images.length, failing };
      // Compare what the annotation can hold (capped list + count), not the full list: the
      // stored one is capped, and comparing against it would re-announce every reconcile.
      const key = (a: PoolAnnotation | undefined): string =>
        `${(a?.failing ?? []).map((f) => `${f.image}\u0000${f.reason}`).join('\u0001')}\u0002${a?.failingOmitted ?? 0}`;
      if (key(parseAnnotation(renderAnnotation(ann))) !== key(own?.state === 'warming' ? own : undefined)) {
        events = [{ reason: EventReason.ImagePullFailing, message: eventMessage(`pool ${config.poolId}: ${describeFailing(failing)}`) }];
      }
    }
  }

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
  };
}

/**
 * Phase 2: the gating taint, decided on the node as returned by our own label write.
 *
 * Race between sidecars of several pools on one node: each writes its own label first and reads
 * the result of that write. Writes to one object are serialized by the apiserver, so whichever
 * sidecar writes last sees every other pool's label in its response, and it is the one that finds
 * all pools warm and removes the taint. Nobody can miss it: if A writes before B, B's response
 * contains A's label. Two sidecars may both decide to remove; the removal is a JSON patch with a
 * `test` on the taint's index, so the second one fails the test, re-reads, and sees no taint.
 *
 * Never left behind forever: our own pool turns partial at its deadline, and even if some other
 * pool selecting the node never reports (its pod never starts, its image is unpullable, pools.json
 * is stale), every sidecar on the node removes the taint at the absolute bound
 * `node.creationTimestamp + max(deadline of the gating pools) + ABSOLUTE_GRACE_SECONDS`. The node's
 * creationTimestamp is immutable, so that bound cannot move. The only case not covered is a node
 * where no sidecar runs at all (e.g. the reconciler image itself cannot be pulled): then there is
 * no process on the node to act, which the README documents with the alert to set.
 */
export function decideGate(node: KNode, pools: PoolsFile, config: ReconcilerConfig, ownState: PoolState, now: number): GateDecision {
  const key = config.gateTaintKey;
  if (key === '' || !(node.spec?.taints ?? []).some((t) => t.key === key)) return { waitingFor: [] };
  const gating = pools.pools.filter((p) => p.gateTaintKey === key && p.id !== config.poolId && placementSelectsNode(p.placement, node));
  const labels = node.metadata.labels ?? {};
  const ready = (v: string | undefined): boolean => v === NodeState.Warm || v === NodeState.Partial;
  const waitingFor = [
    ...(ready(ownState) ? [] : [config.poolId]),
    ...gating.filter((p) => !ready(labels[p.nodeLabelKey])).map((p) => p.id),
  ].sort();
  if (waitingFor.length === 0) return { removeTaintKey: key, outcome: GateOutcome.Ready, waitingFor };
  const created = ms(node.metadata.creationTimestamp) ?? now;
  const longest = Math.max(config.deadlineSeconds, ...gating.map((p) => p.deadlineSeconds ?? DEFAULTS.deadlineSeconds));
  const forceAt = created + (longest + ABSOLUTE_GRACE_SECONDS) * 1000;
  if (now >= forceAt) return { removeTaintKey: key, outcome: GateOutcome.Forced, waitingFor };
  return { waitingFor, forceAt };
}

/**
 * The Event for phase 2, merged with phase 1's so one reconcile posts at most one Event (the
 * write budget is three per transition: label+annotation, taint, Event).
 */
export function mergeEvents(pool: readonly EventIntent[], gate: GateDecision): EventIntent[] {
  if (!gate.removeTaintKey) return [...pool];
  const note =
    gate.outcome === GateOutcome.Forced
      ? `removed gate taint ${gate.removeTaintKey} at the absolute bound; pools not ready: ${gate.waitingFor.join(', ')}`
      : `removed gate taint ${gate.removeTaintKey}: every pool selecting the node is warm or partial`;
  const first = pool[0];
  if (first) return [{ reason: first.reason, message: eventMessage(`${first.message}; ${note}`) }];
  return [{ reason: gate.outcome === GateOutcome.Forced ? EventReason.GateForcedOpen : EventReason.GateOpened, message: eventMessage(note) }];
}

/**
 * When the controller must look again without any pod event: our deadline while warming, the
 * absolute bound while the taint waits. Undefined means "only on events and the resync".
 */
export function nextCheckAt(pool: PoolDecision, gate: GateDecision): number | undefined {
  const t = [pool.state === 'warming' ? pool.deadlineAt : undefined, gate.removeTaintKey ? undefined : gate.forceAt].filter(
    (x): x is number => x !== undefined,
  );
  return t.length ? Math.min(...t) : undefined;
}

/**
 * JSON patch removing every taint with `key`, each guarded by a `test` of the taint at that index
 * so a concurrent change of the list (another sidecar removed it first, the kubelet added one)
 * makes the patch fail instead of removing the wrong taint. Indices descend so earlier removals do
 * not shift later ones. Undefined when there is nothing to remove.
 */
export function taintRemovalPatch(node: KNode, key: string): { op: string; path: string; value?: unknown }[] | undefined {
  const taints = node.spec?.taints ?? [];
  const idx = taints.flatMap((t, i) => (t.key === key ? [i] : [])).reverse();
  if (idx.length === 0) return undefined;
  return idx.flatMap((i) => [
    { op: 'test', path: `/spec/taints/${i}`, value: taints[i] },
    { op: 'remove', path: `/spec/taints/${i}` },
  ]);
}

/**
 * Strategic-merge patch body setting (or, with null, removing) our label and annotation. Map
 * entries merge key by key, so other pools' keys are untouched without any precondition.
 */
export function metadataPatch(config: ReconcilerConfig, d: Pick<PoolDecision, 'label' | 'annotation'>): object | undefined {
  if (d.label === undefined && d.annotation === undefined) return undefined;
  return {
    metadata: {
      ...(d.label !== undefined ? { labels: { [config.nodeLabelKey]: d.label } } : {}),
      ...(d.annotation !== undefined ? { annotations: { [config.nodeAnnotationKey]: d.annotation } } : {}),
    },
  };
}
