/**
 * One node's warm-up as a timeline, pure, from the node, the pods still there and the Events; gone
 * pods (pullers leave once warm) are rebuilt from their Events. Times are seconds after the node's
 * last Ready; a pull's length is the kubelet's own measure, sharper than Event timestamps.
 */
import {
  allStatuses,
  conditionTrueSince,
  imagePresent,
  PullEventReason,
  runningContainers,
  startedAt,
  timeOf,
  type Condition,
  type ObjectMeta,
  type Opt,
  type Pod,
  type Timestamp,
} from '../contract/pod-status.js';
import { laneOf, Role, roleOf } from '../contract/roles.js';
import { EventReason, parseNodeEvent } from '../contract/events.js';
import { compareStrings } from '../contract/order.js';

/** The fields of a Node the timeline reads (client-node's V1Node fits). */
export interface TimelineNode {
  readonly metadata?: Opt<{ readonly name?: Opt<string>; readonly uid?: Opt<string>; readonly creationTimestamp?: Opt<Timestamp> }>;
  readonly status?: Opt<{ readonly conditions?: Opt<readonly Condition[]> }>;
}

/** The fields of a core/v1 Event the timeline reads (client-node's CoreV1Event fits). */
export interface TimelineEvent {
  readonly metadata?: Opt<{ readonly creationTimestamp?: Opt<Timestamp> }>;
  readonly involvedObject: {
    readonly kind?: Opt<string>;
    readonly name?: Opt<string>;
    readonly namespace?: Opt<string>;
    readonly fieldPath?: Opt<string>;
    /** The object's uid: an Event of an earlier pod or node of the same name has another. */
    readonly uid?: Opt<string>;
  };
  readonly reason?: Opt<string>;
  readonly message?: Opt<string>;
  readonly eventTime?: Opt<Timestamp>;
  readonly firstTimestamp?: Opt<Timestamp>;
  readonly lastTimestamp?: Opt<Timestamp>;
  readonly source?: Opt<{ readonly host?: Opt<string> }>;
  readonly reportingInstance?: Opt<string>;
}

export type SpanKind = 'pending' | 'sandbox' | 'init' | 'containers' | 'pulling' | 'present' | 'failed' | 'running';

/** One bar: `from`..`to` in seconds after the origin; `to` undefined means still going at `end`. */
export interface Span {
  readonly kind: SpanKind;
  readonly from: number;
  readonly to?: number;
  readonly note?: string;
}

/** One row: a pod, or one image pulled by a pod. */
export interface TimelineRow {
  readonly kind: 'pod' | 'image';
  /** Both kinds, so rows group by pod. */
  readonly pod: string;
  /** `holder`, `puller <lane>` or `pod`, for a pod row; the image reference for an image row. */
  readonly label: string;
  readonly spans: readonly Span[];
  /** For an image row: whether it was pulled, found present, or failed. */
  readonly outcome?: 'pulled' | 'present' | 'failed' | 'waiting';
  readonly pullSeconds?: number;
}

/** A moment on the node: Ready, a pool warm or partial, the gate opened. */
export interface TimelineMark {
  readonly at: number;
  readonly label: string;
}

export interface Timeline {
  readonly node: string;
  /** The wall-clock time of 0 s (the node's last Ready transition, else the earliest thing seen). */
  readonly origin: string;
  readonly originLabel: 'Ready' | 'first seen';
  /** The last time anything happened, in seconds after the origin (or now, while warming). */
  readonly end: number;
  readonly marks: readonly TimelineMark[];
  readonly rows: readonly TimelineRow[];
  /** What could not be shown, and why (e.g. Events that have expired). */
  readonly notes: readonly string[];
}

/** The fields of a DaemonSet the timeline reads (client-node's V1DaemonSet fits). */
export interface TimelineDaemonSet {
  readonly metadata?: Opt<Pick<ObjectMeta, 'name' | 'namespace' | 'labels'>>;
}

/** What {@link buildTimeline} reads. */
export interface TimelineInput {
  readonly node: TimelineNode;
  readonly pods: readonly Pod[];
  /** Events of the pull pods' namespaces and of the sidecars (about the Node). */
  readonly events: readonly TimelineEvent[];
  /** prewarm's DaemonSets: how pods that are gone are recognised in Events, and what they were. */
  readonly daemonSets: readonly TimelineDaemonSet[];
  readonly now: Date;
}

/** How long the apiserver keeps Events by default (`--event-ttl`). */
export const EVENT_TTL_SECONDS = 3600;

/** How far a node's clock (its kubelet's Events) may run behind the apiserver's (its creation). */
const CLOCK_SLACK_MS = 2000;

/** When an Event happened: its micro-time if set, else its first timestamp, else its creation. */
function eventMs(e: TimelineEvent): number | undefined {
  return timeOf(e.eventTime) ?? timeOf(e.firstTimestamp) ?? timeOf(e.metadata?.creationTimestamp);
}

/** A Go duration as the kubelet prints it, in seconds. */
export function parseGoDuration(text: string): number | undefined {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, µs: 1e-6, ns: 1e-9 };
  const re = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/gy;
  let total = 0;
  let matched = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    total += Number(m[1]) * (units[m[2] ?? ''] ?? 0);
    matched = re.lastIndex;
  }
  return matched === text.length && matched > 0 ? total : undefined;
}

/** The kubelet's pull time from a `Pulled` message. */
export function pullSecondsOf(message: string): number | undefined {
  const m = / in ([0-9.hmsuµn]+) \(/.exec(message);
  return m?.[1] === undefined ? undefined : parseGoDuration(m[1]);
}

/** The container a kubelet Event is about: `spec.containers{name}` or `spec.initContainers{name}`. */
function containerOf(e: TimelineEvent): string | undefined {
  return /^spec\.(?:init)?[cC]ontainers\{(.+)\}$/.exec(e.involvedObject.fieldPath ?? '')?.[1];
}

interface PodFacts {
  name: string;
  namespace: string;
  /** Unknown for a pod known from its Events only. */
  uid?: string | undefined;
  label: string;
  created?: number | undefined;
  scheduled?: number | undefined;
  sandbox?: number | undefined;
  initialized?: number | undefined;
  deleted?: number | undefined;
  containers: Map<string, string>;
  started: Map<string, number>;
  waiting: Map<string, string>;
  /** Containers whose image is on the node (contract `imagePresent`). */
  present: Set<string>;
  events: TimelineEvent[];
}

/** `holder` or `puller <lane>` by a pool object's labels; undefined for anything else. */
function roleLabel(labels: Opt<Readonly<Record<string, string>>>): string | undefined {
  const role = roleOf(labels);
  return role === Role.Puller ? `puller ${laneOf(labels) ?? ''}` : role === Role.Holder ? 'holder' : undefined;
}

/** The row label of a pod: by its own labels, or, for a pod known from its Events only, by its DaemonSet's. */
function podLabel(
  labels: Opt<Readonly<Record<string, string>>>,
  namespace: string,
  name: string,
  daemonSets: readonly TimelineDaemonSet[],
): string {
  return roleLabel(labels) ?? roleLabel(daemonSetOf(namespace, name, daemonSets)?.metadata?.labels) ?? 'pod';
}

/** The DaemonSet that `pod` in `namespace` is named after: `<ds>-<5 random characters>`. */
function daemonSetOf(namespace: string, pod: string, daemonSets: readonly TimelineDaemonSet[]): TimelineDaemonSet | undefined {
  return daemonSets.find((d) => d.metadata?.namespace === namespace && isPodNameOf(d.metadata.name ?? '', pod));
}

function isPodNameOf(ds: string, pod: string): boolean {
  return ds !== '' && pod.length === ds.length + 6 && pod.startsWith(`${ds}-`) && /^[a-z0-9]{5}$/.test(pod.slice(ds.length + 1));
}

export function buildTimeline(input: TimelineInput): Timeline {
  const node = input.node.metadata?.name ?? '';
  const now = input.now.getTime();
  const notes: string[] = [];
  const { pods, nodeEvents } = collect(input, node);

  const readyAt = conditionTrueSince(input.node.status?.conditions, 'Ready');
  const origin = readyAt ?? firstSeen(pods.values(), nodeEvents, now);
  const at = (t: number) => Math.round((t - origin) / 10) / 100;

  const rows: TimelineRow[] = [];
  let droppedEvents = false;
  const ordered = [...pods.values()].sort((a, b) => order(a.label) - order(b.label) || compareStrings(a.label, b.label));
  for (const f of ordered) {
    const pod = podRows(f, at, now, notes);
    rows.push(...pod.rows);
    droppedEvents ||= pod.droppedEvents;
  }

  if (droppedEvents)
    notes.push(
      'some pulls show no Pulled Event: the kubelet sends at most 25 Events per pod in a burst (client-go spam filter), so a pod with many images loses the later ones; their bars end at the container start',
    );
  if (readyAt === undefined) notes.push(`node ${node} is not Ready: times are seconds after the first thing seen`);
  const marks = marksOf(nodeEvents, readyAt !== undefined, origin, at);
  if (pods.size === 0)
    notes.push(
      `no pull pods on ${node} and no Events of any: nothing to show (Events expire after ${EVENT_TTL_SECONDS / 3600} h by default)`,
    );

  const ends = [...rows.flatMap((r) => r.spans.flatMap((s) => [s.from, s.to ?? s.from])), ...marks.map((m) => m.at), 0];
  const open = rows.some((r) => r.spans.some((s) => s.to === undefined && s.kind !== 'running'));
  return {
    node,
    origin: new Date(origin).toISOString(),
    originLabel: readyAt === undefined ? 'first seen' : 'Ready',
    end: open ? Math.max(at(now), ...ends) : Math.max(...ends),
    marks,
    rows,
    notes,
  };
}

/** What a pod still there says of itself. */
function podFacts(p: Pod, daemonSets: readonly TimelineDaemonSet[]): PodFacts {
  const name = p.metadata?.name ?? '';
  const namespace = p.metadata?.namespace ?? '';
  const statuses = allStatuses(p);
  return {
    name,
    namespace,
    uid: p.metadata?.uid ?? undefined,
    label: podLabel(p.metadata?.labels, namespace, name, daemonSets),
    created: timeOf(p.metadata?.creationTimestamp),
    scheduled: conditionTrueSince(p.status?.conditions, 'PodScheduled'),
    sandbox: conditionTrueSince(p.status?.conditions, 'PodReadyToStartContainers'),
    initialized: conditionTrueSince(p.status?.conditions, 'Initialized'),
    deleted: timeOf(p.metadata?.deletionTimestamp),
    containers: new Map(runningContainers(p.spec).map((c) => [c.name, c.image ?? ''])),
    started: new Map(
      statuses.flatMap((c) => {
        const t = startedAt(c);
        return t === undefined ? [] : [[c.name, t] as const];
      }),
    ),
    waiting: new Map(statuses.flatMap((c) => (c.state?.waiting?.reason === undefined ? [] : [[c.name, c.state.waiting.reason] as const]))),
    present: new Set(statuses.filter(imagePresent).map((c) => c.name)),
    events: [],
  };
}

/**
 * The node's pull pods, by `namespace/name`, each with its Events, and the Events about the node.
 * Pods that are gone are rebuilt from their Events.
 */
function collect(input: TimelineInput, node: string): { pods: Map<string, PodFacts>; nodeEvents: TimelineEvent[] } {
  const pods = new Map<string, PodFacts>();
  const key = (ns: string, name: string) => `${ns}/${name}`;
  for (const p of input.pods) {
    if (p.spec?.nodeName !== node) continue;
    pods.set(key(p.metadata?.namespace ?? '', p.metadata?.name ?? ''), podFacts(p, input.daemonSets));
  }
  const nodeEvents: TimelineEvent[] = [];
  // Events outlive their objects and names come back: an earlier object's Event is told apart by
  // its uid, or, for a pod known only from Events, by predating the node (with clock slack). The
  // kubelet puts its node's name in the uid field, so only another real uid rules out a Node Event.
  const nodeUid = input.node.metadata?.uid ?? undefined;
  const nodeBorn = timeOf(input.node.metadata?.creationTimestamp);
  const otherUid = (e: TimelineEvent, uid: string | undefined): boolean => {
    const theirs = e.involvedObject.uid ?? undefined;
    return uid !== undefined && theirs !== undefined && theirs !== uid && theirs !== e.involvedObject.name;
  };
  const beforeNode = (e: TimelineEvent): boolean => {
    const t = eventMs(e);
    return nodeBorn !== undefined && t !== undefined && t < nodeBorn - CLOCK_SLACK_MS;
  };
  for (const e of input.events) {
    const o = e.involvedObject;
    if (o.kind === 'Node' && o.name === node) {
      if (!otherUid(e, nodeUid)) nodeEvents.push(e);
      continue;
    }
    if (o.kind !== 'Pod' || o.name === undefined || o.namespace === undefined) continue;
    let facts = pods.get(key(o.namespace, o.name));
    if (facts === undefined ? beforeNode(e) : otherUid(e, facts.uid)) continue;
    const onNode = e.source?.host === node || (e.reason === 'Scheduled' && (e.message ?? '').endsWith(` to ${node}`));
    if (facts === undefined && onNode && daemonSetOf(o.namespace, o.name, input.daemonSets) !== undefined) {
      facts = {
        name: o.name,
        namespace: o.namespace,
        label: podLabel(undefined, o.namespace, o.name, input.daemonSets),
        containers: new Map(),
        started: new Map(),
        waiting: new Map(),
        present: new Set(),
        events: [],
      };
      pods.set(key(o.namespace, o.name), facts);
    }
    facts?.events.push(e);
  }
  return { pods, nodeEvents };
}

/** The earliest thing seen of the pods and the node's Events, else now. */
function firstSeen(pods: Iterable<PodFacts>, nodeEvents: readonly TimelineEvent[], now: number): number {
  const times: number[] = [];
  for (const f of pods) {
    for (const t of [f.created, f.scheduled, f.sandbox, f.initialized, f.deleted, ...f.started.values()])
      if (t !== undefined) times.push(t);
    for (const e of f.events) {
      const t = eventMs(e);
      if (t !== undefined) times.push(t);
    }
  }
  for (const e of nodeEvents) {
    const t = eventMs(e);
    if (t !== undefined) times.push(t);
  }
  return times.length > 0 ? Math.min(...times) : now;
}

/** One image container's row, when it has anything to show, with when it started and whether Events were dropped. */
interface ImageRowOf {
  readonly row: TimelineRow;
  readonly started: number | undefined;
  readonly droppedEvents: boolean;
}

/** The spans and outcome of one image container, from its Events and the kubelet's statuses. */
function imageRow(f: PodFacts, c: string, containerEvents: readonly TimelineEvent[], at: (t: number) => number): ImageRowOf | undefined {
  // Completed init containers (the helper) are the init phase; native sidecars are rows.
  const evs = containerEvents.filter(
    (e) => containerOf(e) === c && (f.containers.has(c) || !/^spec\.initContainers/.test(e.involvedObject.fieldPath ?? '')),
  );
  if (evs.length === 0 && !f.containers.has(c)) return undefined;
  const pulled = evs.find((e) => e.reason === PullEventReason.Pulled);
  const pulling = evs.find((e) => e.reason === PullEventReason.Pulling);
  const failed = evs.find((e) => e.reason === 'Failed' && /ErrImagePull|pull/i.test(e.message ?? ''));
  const started = f.started.get(c) ?? min(evs.filter((e) => e.reason === 'Started').map(eventMs));
  const image = f.containers.get(c) ?? /image "([^"]+)"/.exec(pulled?.message ?? pulling?.message ?? '')?.[1] ?? c;
  const spans: Span[] = [];
  let outcome: TimelineRow['outcome'] = 'waiting';
  let pullSeconds: number | undefined;
  let droppedEvents = false;
  const pulledAt = pulled === undefined ? undefined : eventMs(pulled);
  if (pulled !== undefined && pulledAt !== undefined) {
    pullSeconds = pullSecondsOf(pulled.message ?? '');
    if (pullSeconds === undefined) {
      outcome = 'present';
      spans.push({ kind: 'present', from: at(pulledAt), to: at(pulledAt) });
    } else {
      outcome = 'pulled';
      // The kubelet's measure is sharper than Event timestamps: the bar is exactly that long.
      spans.push({ kind: 'pulling', from: at(pulledAt - pullSeconds * 1000), to: at(pulledAt), note: `${round(pullSeconds)}s` });
    }
  } else if (failed !== undefined) {
    outcome = 'failed';
    const from = eventMs(pulling ?? failed);
    if (from !== undefined)
      spans.push({ kind: 'failed', from: at(from), to: at(eventMs(failed) ?? from), note: f.waiting.get(c) ?? 'ErrImagePull' });
  } else if (pulling !== undefined) {
    const from = eventMs(pulling);
    // Present without a Pulled Event: client-go's spam filter drops a pod's Events beyond its burst.
    if (started !== undefined || f.present.has(c)) {
      outcome = 'pulled';
      droppedEvents = true;
    }
    if (from !== undefined)
      spans.push({
        kind: 'pulling',
        from: at(from),
        ...(started === undefined ? {} : { to: at(Math.max(from, started)), note: 'end not reported' }),
      });
  } else if (started !== undefined || f.present.has(c)) {
    outcome = 'present';
    droppedEvents = f.events.length > 0;
  }
  if (started !== undefined) spans.push({ kind: 'running', from: at(started), ...(f.deleted === undefined ? {} : { to: at(f.deleted) }) });
  const row: TimelineRow = {
    kind: 'image',
    pod: f.name,
    label: image,
    spans,
    outcome,
    ...(pullSeconds === undefined ? {} : { pullSeconds: round(pullSeconds) }),
  };
  return { row, started, droppedEvents };
}

/** The pod's own phases: pending, sandbox, init, then its containers until the last one started. */
function podPhaseSpans(f: PodFacts, lastStarted: number | undefined, at: (t: number) => number): Span[] {
  const podSpans: Span[] = [];
  const phase = (kind: SpanKind, from: number | undefined, to: number | undefined) => {
    if (from !== undefined) podSpans.push({ kind, from: at(from), ...(to === undefined ? {} : { to: at(Math.max(from, to)) }) });
  };
  phase('pending', f.created, f.scheduled);
  phase('sandbox', f.scheduled, f.sandbox);
  phase('init', f.sandbox, f.initialized);
  const allStarted =
    f.containers.size > 0 ? [...f.containers.keys()].every((c) => f.started.has(c)) : f.deleted !== undefined || lastStarted !== undefined;
  phase('containers', f.initialized ?? f.sandbox, allStarted ? lastStarted : undefined);
  return podSpans;
}

/** One pod's rows: its phases, then one per image container in the kubelet's order. */
function podRows(f: PodFacts, at: (t: number) => number, now: number, notes: string[]): { rows: TimelineRow[]; droppedEvents: boolean } {
  const byReason = (reason: string) => f.events.filter((e) => e.reason === reason);
  f.scheduled ??= min(byReason('Scheduled').map(eventMs));
  f.created ??= f.scheduled;
  // For a gone pod, the first container Event marks its sandbox up (pulls start only then).
  const containerEvents = f.events.filter((e) => containerOf(e) !== undefined);
  f.sandbox ??= min(containerEvents.map(eventMs));
  f.deleted ??= min(byReason('Killing').map(eventMs));
  if (f.events.length === 0 && f.created !== undefined && (now - f.created) / 1000 > EVENT_TTL_SECONDS)
    notes.push(
      `no Events left for pod ${f.name}: the apiserver keeps Events ${EVENT_TTL_SECONDS / 3600} h by default, so pulls are shown from container statuses only`,
    );
  const names = new Set([...f.containers.keys(), ...containerEvents.map((e) => containerOf(e) ?? '')]);
  const imageRows: TimelineRow[] = [];
  let lastStarted: number | undefined;
  let droppedEvents = false;
  for (const c of names) {
    const r = imageRow(f, c, containerEvents, at);
    if (r === undefined) continue;
    if (r.started !== undefined) lastStarted = Math.max(lastStarted ?? r.started, r.started);
    droppedEvents ||= r.droppedEvents;
    imageRows.push(r.row);
  }
  const pod: TimelineRow = { kind: 'pod', pod: f.name, label: f.label, spans: podPhaseSpans(f, lastStarted, at) };
  return { rows: [pod, ...imageRows], droppedEvents };
}

/** Ready (when the node is), then the marks of the sidecar's Events about the node, in time order. */
function marksOf(nodeEvents: readonly TimelineEvent[], ready: boolean, origin: number, at: (t: number) => number): TimelineMark[] {
  const marks: TimelineMark[] = [];
  if (ready) marks.push({ at: 0, label: 'Ready' });
  for (const e of nodeEvents) {
    const t = eventMs(e);
    if (t === undefined || t < origin - 1000) continue;
    for (const label of markLabels(e)) marks.push({ at: at(t), label });
  }
  marks.sort((a, b) => a.at - b.at);
  return marks;
}

/** The marks of one sidecar Event about the node, gate removal included (contract `gateEvent`). */
function markLabels(e: TimelineEvent): string[] {
  const facts = parseNodeEvent(e.reason, e.message);
  if (facts === undefined) return [];
  const of = facts.pool === undefined ? '' : ` ${facts.pool}`;
  const gate =
    facts.gate === 'forced'
      ? ['taint removed (forced)']
      : facts.gate === 'failsafe'
        ? ['taint removed (fail-safe)']
        : facts.gate === 'ready'
          ? ['taint removed']
          : [];
  if (facts.reason === EventReason.Warm) return [`warm${of}`, ...gate];
  if (facts.reason === EventReason.Partial) return [`partial${of}`, ...gate];
  if (
    facts.reason === EventReason.GateOpened ||
    facts.reason === EventReason.GateForcedOpen ||
    facts.reason === EventReason.GateFailsafeOpened
  )
    return gate;
  return [];
}

function order(label: string): number {
  return label === 'holder' ? 0 : label.startsWith('puller') ? 1 : 2;
}

function min(values: readonly (number | undefined)[]): number | undefined {
  const v = values.filter((x): x is number => x !== undefined);
  return v.length === 0 ? undefined : Math.min(...v);
}

function round(s: number): number {
  return Math.round(s * 100) / 100;
}
