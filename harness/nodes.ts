/**
 * Real nodes seen from outside: Ready, labels and taints through one node watch, and the node's own
 * containerd polled until a set of images is present. Shared by the e2e tests and the benchmarks.
 */
import { containerdName } from './cluster/images.js';
import { nodeImagesAsync } from './cluster/node.js';
import { pollUntil } from './time.js';
import type { Kube, KubeObject } from './kube.js';

/** When a node was first seen in each state, by the watch (Date.now() times). */
export interface NodeTimes {
  /** When the join was started ({@link NodeWatch.expect} called). */
  joinAt: number;
  /** First watch event of the Node object. */
  registeredAt?: number;
  /** First watch event with Ready=True. */
  readyAt?: number;
  /** Labels first seen, by key=value. */
  labelsAt: Map<string, number>;
  /** Taints first seen, by key. */
  taintsAt: Map<string, number>;
  /** Taints first seen absent again after having been seen, by key. */
  taintsGoneAt: Map<string, number>;
}

/** One watch over all nodes carrying `selector`; records first-seen times per node. */
export class NodeWatch {
  readonly times = new Map<string, NodeTimes>();
  private stopWatch: () => void = () => undefined;
  private closed = false;
  constructor(
    private readonly kube: Kube,
    private readonly selector: string,
    /** Where a re-list after a failed watch is reported. */
    private readonly log: (msg: string) => void = (msg) => process.stderr.write(`[node-watch] ${msg}\n`),
  ) {}

  async start(): Promise<void> {
    const l = await this.kube.list('/api/v1/nodes', { labelSelector: this.selector });
    for (const n of l.items) this.observe(n);
    this.loop(l.metadata.resourceVersion);
  }

  private loop(rv: string): void {
    if (this.closed) return;
    let last = rv;
    this.stopWatch = this.kube.watch(
      '/api/v1/nodes',
      { labelSelector: this.selector, resourceVersion: rv, timeoutSeconds: '600' },
      (type, obj) => {
        if (obj.metadata?.resourceVersion) last = obj.metadata.resourceVersion;
        if (type === 'ADDED' || type === 'MODIFIED') this.observe(obj);
      },
      (err) => {
        if (this.closed) return;
        if (err) this.log(`node watch ended: ${err.message}; re-listing`);
        void (err
          ? this.kube.list('/api/v1/nodes', { labelSelector: this.selector }).then((l2) => {
              for (const n of l2.items) this.observe(n);
              this.loop(l2.metadata.resourceVersion);
            })
          : Promise.resolve(this.loop(last)));
      },
    );
  }

  expect(name: string): NodeTimes {
    const t: NodeTimes = { joinAt: Date.now(), labelsAt: new Map(), taintsAt: new Map(), taintsGoneAt: new Map() };
    this.times.set(name, t);
    return t;
  }

  private observe(n: KubeObject): void {
    const t = this.times.get(n.metadata.name);
    if (!t) return;
    const now = Date.now();
    t.registeredAt ??= now;
    const status = n.status as { conditions?: { type: string; status: string }[] } | undefined;
    const ready = (status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    if (ready) t.readyAt ??= now;
    for (const [k, v] of Object.entries(n.metadata.labels ?? {})) if (!t.labelsAt.has(`${k}=${v}`)) t.labelsAt.set(`${k}=${v}`, now);
    const spec = n.spec as { taints?: { key: string }[] } | undefined;
    const taints = new Set((spec?.taints ?? []).map((x) => x.key));
    for (const k of taints) if (!t.taintsAt.has(k)) t.taintsAt.set(k, now);
    for (const k of t.taintsAt.keys()) if (!taints.has(k) && !t.taintsGoneAt.has(k)) t.taintsGoneAt.set(k, now);
  }

  close(): void {
    this.closed = true;
    this.stopWatch();
  }
}

/** The refs (as containerd names them: Docker-normalised, or `repo@digest` when pinned) that a node's containerd does not hold yet. */
export async function missingImages(name: string, refs: readonly string[]): Promise<string[]> {
  const have = new Set(await nodeImagesAsync(name));
  return refs.map(containerdName).filter((r) => !have.has(r));
}

/** Polls until every ref is in the node's containerd; returns the time first seen complete, or undefined at the deadline. */
export async function waitImages(name: string, refs: readonly string[], deadline: number, intervalMs = 200): Promise<number | undefined> {
  return pollUntil(async () => ((await missingImages(name, refs)).length === 0 ? Date.now() : undefined), deadline, intervalMs);
}

/** Waits until `pred` holds for the node's times; false when it still does not at `deadline`. */
export async function until(t: NodeTimes, pred: (t: NodeTimes) => boolean, deadline: number): Promise<boolean> {
  return (await pollUntil(() => pred(t), deadline, 100)) ?? false;
}
