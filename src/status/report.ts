/**
 * What `prewarm status` reports, computed from what the cluster shows: the pull DaemonSets, their
 * pods (holders and the burst pullers of warming nodes), and the per-pool labels and annotations
 * the sidecars write on nodes. Container statuses are judged as the sidecar judges them
 * (src/contract/pod-status.ts). Pure: the CLI lists the objects and renders the result.
 */
import { parseAnnotation, type PoolAnnotation } from '../contract/annotation.js';
import { allStatuses, containerStarted, imageContainers, imageStatuses, pullFailure, type Opt, type Pod } from '../contract/pod-status.js';
import { nodeAnnotationKey, nodeLabelKey } from '../contract/identity.js';
import { NodeState } from '../contract/names.js';
import { isHolder, isPuller, laneOf, poolOf } from '../contract/roles.js';
import { compareStrings } from '../contract/order.js';

/** The fields of a DaemonSet that status reads (client-node's V1DaemonSet fits). */
export interface ObservedDaemonSet {
  readonly metadata?: Opt<{
    readonly name?: Opt<string>;
    readonly namespace?: Opt<string>;
    readonly labels?: Opt<Readonly<Record<string, string>>>;
  }>;
  readonly status?: Opt<{ readonly desiredNumberScheduled?: Opt<number>; readonly numberReady?: Opt<number> }>;
}

/** The fields of a node that status reads (client-node's V1Node fits). */
export interface ObservedNode {
  readonly metadata?: Opt<{
    readonly name?: Opt<string>;
    readonly labels?: Opt<Readonly<Record<string, string>>>;
    readonly annotations?: Opt<Readonly<Record<string, string>>>;
  }>;
}

/** A node's state for one pool. */
export type NodePoolState = NodeState | 'cold';

/** One image that is not on a node yet, with the kubelet's reason (the node annotation's own list is `FailingImage`). */
export interface WaitingImage {
  readonly image: string;
  readonly reason: string;
  readonly message?: string;
}

/** One burst puller on a warming node: how far its lane has come. */
export interface LaneReport {
  /** The puller's lane key (contract `laneOf`). */
  readonly lane: string;
  /** Images of the lane. */
  readonly images: number;
  /** Images whose container has started in this puller, so are on the node. */
  readonly started: number;
}

/** One node of one pool. */
export interface NodeReport {
  readonly node: string;
  readonly state: NodePoolState;
  readonly images: number;
  readonly present?: number;
  readonly timeToWarmSeconds?: number;
  /** Failing images of the holder and of every puller on the node, one per image. */
  readonly failing: readonly WaitingImage[];
  /** The pool's burst pullers on the node, sorted by lane; absent when there are none. */
  readonly lanes?: readonly LaneReport[];
}

/** One pool. */
export interface PoolReport {
  readonly pool: string;
  readonly namespace: string;
  readonly daemonSet: string;
  /** Nodes the DaemonSet wants a pod on. */
  readonly desired: number;
  readonly warm: number;
  readonly partial: number;
  readonly cold: number;
  readonly nodes: readonly NodeReport[];
}

/** The whole report. */
export interface StatusReport {
  readonly pools: readonly PoolReport[];
  /** True when every desired node of every pool is warm (partial is not warm). */
  readonly allWarm: boolean;
}

/** Builds the report. Pools, and nodes within a pool, come out sorted by name. */
export function buildReport(daemonSets: readonly ObservedDaemonSet[], pods: readonly Pod[], nodes: readonly ObservedNode[]): StatusReport {
  const nodesByName = new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
  const pools: PoolReport[] = [];
  for (const ds of daemonSets) {
    const pool = isHolder(ds.metadata?.labels) ? poolOf(ds.metadata?.labels) : undefined;
    if (pool === undefined) continue;
    const namespace = ds.metadata?.namespace ?? '';
    const members = pods.filter((p) => p.metadata?.namespace === namespace && p.spec?.nodeName !== undefined);
    const own = members.filter((p) => isHolder(p.metadata?.labels) && poolOf(p.metadata?.labels) === pool);
    // Burst pullers: pods of the pool that are not its holder; they exist only while a node warms.
    const pullers = members.filter((p) => isPuller(p.metadata?.labels) && poolOf(p.metadata?.labels) === pool);
    const reports = own
      .map((pod) =>
        nodeReport(
          pool,
          pod,
          pullers.filter((q) => q.spec?.nodeName === pod.spec?.nodeName),
          nodesByName.get(pod.spec?.nodeName ?? ''),
        ),
      )
      .sort((a, b) => compareStrings(a.node, b.node));
    const count = (s: NodePoolState) => reports.filter((r) => r.state === s).length;
    const desired = ds.status?.desiredNumberScheduled ?? reports.length;
    // Nodes the DaemonSet wants but has no pod on yet are cold too.
    const cold = count('cold') + Math.max(0, desired - reports.length);
    pools.push({
      pool,
      namespace,
      daemonSet: ds.metadata?.name ?? '',
      desired,
      warm: count(NodeState.Warm),
      partial: count(NodeState.Partial),
      cold,
      nodes: reports,
    });
  }
  pools.sort((a, b) => compareStrings(`${a.namespace}/${a.pool}`, `${b.namespace}/${b.pool}`));
  return { pools, allWarm: pools.every((p) => p.warm === p.desired) };
}

function nodeReport(pool: string, pod: Pod, pullers: readonly Pod[], node: ObservedNode | undefined): NodeReport {
  const name = pod.spec?.nodeName ?? '';
  const label = node?.metadata?.labels?.[nodeLabelKey(pool)];
  const annotation: PoolAnnotation | undefined = parseAnnotation(node?.metadata?.annotations?.[nodeAnnotationKey(pool)]);
  const state: NodePoolState = label === NodeState.Warm ? NodeState.Warm : label === NodeState.Partial ? NodeState.Partial : 'cold';
  // The pods' own statuses are fresher than the annotation for images still failing now; an image
  // failing in the holder and in a puller is listed once.
  const live = new Map<string, WaitingImage>();
  for (const c of [pod, ...pullers].flatMap(allStatuses)) {
    const image = c.image ?? '';
    const reason = pullFailure(c);
    if (reason === undefined || live.has(image)) continue;
    const message = c.state?.waiting?.message;
    live.set(image, { image, reason, ...(message === undefined ? {} : { message }) });
  }
  const failing = live.size > 0 ? [...live.values()] : (annotation?.failing ?? []).map((f) => ({ ...f }));
  const lanes = pullers
    // An early pool's puller of the sidecar's image alone holds none of the pool's.
    .filter((p) => imageContainers(p.spec).length > 0)
    .map((p) => {
      const statuses = imageStatuses(p);
      return {
        lane: laneOf(p.metadata?.labels) ?? '',
        images: statuses.length,
        started: statuses.filter(containerStarted).length,
      };
    })
    .sort((a, b) => compareStrings(a.lane, b.lane));
  return {
    node: name,
    state,
    images: annotation?.images ?? imageStatuses(pod).length,
    ...(annotation?.present === undefined ? {} : { present: annotation.present }),
    ...(annotation?.ttwSeconds === undefined ? {} : { timeToWarmSeconds: annotation.ttwSeconds }),
    failing: [...failing].sort((a, b) => compareStrings(a.image, b.image)),
    ...(lanes.length === 0 ? {} : { lanes }),
  };
}

/** Output formats of `prewarm status`. */
export type StatusFormat = 'table' | 'wide' | 'json' | 'yaml';

/** Renders the report as text tables: one line per pool, and per node with `wide`. */
export function renderTable(report: StatusReport, wide: boolean): string {
  const rows: string[][] = [['NAMESPACE', 'POOL', 'DESIRED', 'WARM', 'PARTIAL', 'COLD']];
  for (const p of report.pools) rows.push([p.namespace, p.pool, String(p.desired), String(p.warm), String(p.partial), String(p.cold)]);
  let out = table(rows);
  const nodeRows: string[][] = [['POOL', 'NODE', 'STATE', 'IMAGES', 'TIME-TO-WARM', 'LANES', 'FAILING']];
  for (const p of report.pools) {
    for (const n of p.nodes) {
      // Without `wide`, only nodes that need attention are listed.
      if (!wide && n.state === NodeState.Warm) continue;
      const images = n.present === undefined ? String(n.images) : `${n.present}/${n.images}`;
      const ttw = n.timeToWarmSeconds === undefined ? '-' : `${n.timeToWarmSeconds}s`;
      const failing = n.failing.length === 0 ? '-' : n.failing.map((f) => `${f.image} (${f.reason})`).join(', ');
      // Each puller as `<lane>:<started>/<images>`, e.g. `1:2/3`.
      const lanes = n.lanes === undefined ? '-' : n.lanes.map((l) => `${l.lane}:${l.started}/${l.images}`).join(' ');
      nodeRows.push([p.pool, n.node, n.state, images, ttw, lanes, failing]);
    }
  }
  if (nodeRows.length > 1) out += `\n${table(nodeRows)}`;
  return out;
}

/** Rows as aligned columns, three spaces apart; the last column is never padded. */
export function table(rows: readonly string[][]): string {
  const widths = rows[0]?.map((_, i) => rows.reduce((w, r) => Math.max(w, (r[i] ?? '').length), 0)) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('   ')).join('\n') + '\n';
}
