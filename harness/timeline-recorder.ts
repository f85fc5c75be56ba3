/**
 * Records one node's warm-up live, for the waterfall of the e2e tests and benchmarks: the node, its
 * pods and every Event, each stamped with the time our watch first saw it (ms), since the
 * apiserver's own timestamps have 1 s resolution. The result feeds `buildTimeline`
 * (src/status/timeline.ts), the same code `prewarm status --node` runs, so the chart and the
 * command cannot disagree on what a phase means.
 */
import type { Pod } from '../src/contract/pod-status.js';
import type { TimelineDaemonSet, TimelineEvent, TimelineInput } from '../src/status/timeline.js';
import type { Kube, KubeObject } from './kube.js';

interface Seen {
  obj: KubeObject;
  /** First time each condition (type=True), container start and deletion was seen. */
  first: Map<string, number>;
}

const iso = (t: number) => new Date(t).toISOString();

/** Watches a node, the pods bound to it and all Events, from start() until stop(). */
export class TimelineRecorder {
  private readonly pods = new Map<string, Seen>();
  private readonly events = new Map<string, TimelineEvent>();
  private node: Seen | undefined;
  private readonly stops: (() => void)[] = [];

  constructor(
    private readonly kube: Kube,
    readonly nodeName: string,
  ) {}

  /** Starts the three watches (from now: earlier history comes from the objects' own times). */
  async start(): Promise<void> {
    const [pods, events, nodes] = await Promise.all([
      this.kube.list('/api/v1/pods', { fieldSelector: `spec.nodeName=${this.nodeName}` }),
      this.kube.list('/api/v1/events'),
      this.kube.list('/api/v1/nodes', { fieldSelector: `metadata.name=${this.nodeName}` }),
    ]);
    for (const p of pods.items) this.onPod(p);
    for (const n of nodes.items) this.onNode(n);
    for (const e of events.items) this.onEvent(e, undefined);
    this.follow('/api/v1/pods', { fieldSelector: `spec.nodeName=${this.nodeName}` }, pods.metadata.resourceVersion, (o) => this.onPod(o));
    this.follow('/api/v1/events', {}, events.metadata.resourceVersion, (o) => this.onEvent(o, Date.now()));
    this.follow('/api/v1/nodes', { fieldSelector: `metadata.name=${this.nodeName}` }, nodes.metadata.resourceVersion, (o) =>
      this.onNode(o),
    );
  }

  /** First-seen times per pod (`ns/name` → what → ms), for looking at the kubelet's status lag. */
  firstSeen(): Record<string, Record<string, string>> {
    return Object.fromEntries([...this.pods].map(([k, v]) => [k, Object.fromEntries([...v.first].map(([w, t]) => [w, iso(t)]))]));
  }

  stop(): void {
    for (const s of this.stops) s();
  }

  /**
   * The recorded objects, their times replaced by the first-seen ones, for `buildTimeline`. Only
   * the pods of this node object: a pod created before the node was (bound to an earlier node of
   * the same name, still being deleted) is left out.
   */
  input(daemonSets: readonly TimelineDaemonSet[], now = new Date()): TimelineInput {
    const born = Date.parse(this.node?.obj.metadata.creationTimestamp ?? '');
    const ours = (p: Seen): boolean => !(Date.parse(p.obj.metadata.creationTimestamp ?? '') < born);
    return {
      node: this.node === undefined ? { metadata: { name: this.nodeName } } : sharpen(this.node),
      pods: [...this.pods.values()].filter(ours).map((p) => sharpen(p) as Pod),
      events: [...this.events.values()],
      daemonSets,
      now,
    };
  }

  private follow(path: string, params: Record<string, string>, rv: string, on: (o: KubeObject) => void): void {
    let last = rv;
    let stopped = false;
    const run = (): void => {
      const stop = this.kube.watch(
        path,
        { ...params, resourceVersion: last, timeoutSeconds: '600' },
        (type, obj) => {
          if (obj.metadata.resourceVersion !== undefined) last = obj.metadata.resourceVersion;
          if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') on(obj);
        },
        () => {
          if (!stopped) setTimeout(run, 200);
        },
      );
      this.stops.push(() => {
        stopped = true;
        stop();
      });
    };
    run();
  }

  private onPod(p: KubeObject): void {
    const key = `${p.metadata.namespace ?? ''}/${p.metadata.name}`;
    const seen = this.pods.get(key) ?? { obj: p, first: new Map<string, number>() };
    seen.obj = p;
    stamp(seen, Date.now());
    this.pods.set(key, seen);
  }

  private onNode(n: KubeObject): void {
    // A node deleted and registered again under the same name is another node: start over.
    if (this.node !== undefined && this.node.obj.metadata.uid !== n.metadata.uid) this.node = undefined;
    this.node ??= { obj: n, first: new Map() };
    this.node.obj = n;
    stamp(this.node, Date.now());
  }

  /** Events listed at start keep their own times; watched ones get the time they arrived. */
  private onEvent(e: KubeObject, at: number | undefined): void {
    const key = `${e.metadata.namespace ?? ''}/${e.metadata.name}`;
    if (this.events.has(key)) return;
    const ev = e as unknown as TimelineEvent;
    this.events.set(key, at === undefined ? ev : { ...ev, eventTime: iso(at) });
  }
}

/** Records the first time each condition turned True, each container started, deletion began. */
function stamp(seen: Seen, now: number): void {
  const status = seen.obj.status as
    | {
        conditions?: { type: string; status: string }[];
        initContainerStatuses?: { name: string; state?: { running?: object } }[];
        containerStatuses?: { name: string; state?: { running?: object } }[];
      }
    | undefined;
  const mark = (k: string) => {
    if (!seen.first.has(k)) seen.first.set(k, now);
  };
  for (const c of status?.conditions ?? []) if (c.status === 'True') mark(`condition/${c.type}`);
  // Init containers too: the sidecar is a native sidecar.
  for (const c of [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])])
    if (c.state?.running !== undefined) mark(`started/${c.name}`);
  if (seen.obj.metadata.deletionTimestamp !== undefined) mark('deleted');
  mark('created');
}

/**
 * A copy of the object with first-seen times in place of the apiserver's, where the watch saw the
 * change happen (not for what was already true when recording began).
 */
function sharpen(seen: Seen): KubeObject {
  const o = structuredClone(seen.obj);
  const status = o.status as
    | {
        conditions?: { type: string; status: string; lastTransitionTime?: string }[];
        initContainerStatuses?: { name: string; state?: { running?: { startedAt?: string } } }[];
        containerStatuses?: { name: string; state?: { running?: { startedAt?: string } } }[];
      }
    | undefined;
  for (const c of status?.conditions ?? []) {
    const t = seen.first.get(`condition/${c.type}`);
    if (t !== undefined && c.status === 'True' && sameSecond(c.lastTransitionTime, t)) c.lastTransitionTime = iso(t);
  }
  for (const c of [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])]) {
    const t = seen.first.get(`started/${c.name}`);
    if (t !== undefined && c.state?.running !== undefined && sameSecond(c.state.running.startedAt, t)) c.state.running.startedAt = iso(t);
  }
  const c = seen.first.get('created');
  if (c !== undefined && sameSecond(o.metadata.creationTimestamp, c)) o.metadata.creationTimestamp = iso(c);
  const d = seen.first.get('deleted');
  if (d !== undefined && o.metadata.deletionTimestamp !== undefined) o.metadata.deletionTimestamp = iso(d);
  return o;
}

/**
 * Whether a first-seen time belongs to the server's (1 s resolution) timestamp: it may lag it by
 * the watch's latency, never precede it. Otherwise the change happened before recording began.
 */
function sameSecond(server: string | undefined, seen: number): boolean {
  if (server === undefined) return false;
  const s = Date.parse(server);
  return seen >= s - 1000 && seen < s + 3000;
}
