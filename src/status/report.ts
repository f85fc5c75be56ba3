/**
 * What `prewarm status` reports, computed from what the cluster shows: the pull DaemonSets, their
 * pods, and the per-pool labels and annotations the sidecars write on nodes. Pure: the CLI lists
 * the objects and renders the result.
 */
import { parseAnnotation, type PoolAnnotation } from '../contract/annotation.js';
import { PULL_FAILURE_REASONS } from '../reconciler/reasons.js';
import { nodeAnnotationKey, nodeLabelKey } from '../synth/naming.js';
import { LABEL_POOL, NodeState } from '../contract/names.js';

type Opt<T> = T | undefined;

/** The fields of a DaemonSet that status reads (client-node's V1DaemonSet fits). */
export interface ObservedDaemonSet {
  readonly metadata?: Opt<{
    readonly name?: Opt<string>;
    readonly namespace?: Opt<string>;
    readonly labels?: Opt<Readonly<Record<string, string>>>;
  }>;
  readonly status?: Opt<{ readonly desiredNumberScheduled?: Opt<number>; readonly numberReady?: Opt<number> }>;
}

/** The fields of a pull pod that status reads (client-node's V1Pod fits). */
export interface ObservedPod {
  readonly metadata?: Opt<{ readonly labels?: Opt<Readonly<Record<string, string>>>; readonly namespace?: Opt<string> }>;
  readonly spec?: Opt<{ readonly nodeName?: Opt<string> }>;
  readonly status?: Opt<{
    readonly containerStatuses?: Opt<
      readonly {
        readonly name: string;
        readonly image: string;
        readonly state?: Opt<{ readonly waiting?: Opt<{ readonly reason?: Opt<string>; readonly message?: Opt<string> }> }>;
      }[]
    >;
  }>;
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

/** One image that is not on a node yet, with the kubelet's reason. */
export interface FailingImage {
  readonly image: string;
  readonly reason: string;
  readonly message?: string;
}

/** One node of one pool. */
export interface NodeReport {
  readonly node: string;
  readonly state: NodePoolState;
  readonly images: number;
  readonly present?: number;
  readonly timeToWarmSeconds?: number;
  readonly failing: readonly FailingImage[];
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
export function buildReport(
  daemonSets: readonly ObservedDaemonSet[],
  pods: readonly ObservedPod[],
  nodes: readonly ObservedNode[],
): StatusReport {
  const nodesByName = new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
  const pools: PoolReport[] = [];
  for (const ds of daemonSets) {
    const pool = ds.metadata?.labels?.[LABEL_POOL];
    if (pool === undefined) continue;
    const namespace = ds.metadata?.namespace ?? '';
    const own = pods.filter(
      (p) => p.metadata?.labels?.[LABEL_POOL] === pool && p.metadata?.namespace === namespace && p.spec?.nodeName !== undefined,
    );
    const reports = own
      .map((pod) => nodeReport(pool, pod, nodesByName.get(pod.spec?.nodeName ?? '')))
      .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
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
  pools.sort((a, b) => (a.namespace + '/' + a.pool < b.namespace + '/' + b.pool ? -1 : 1));
  return { pools, allWarm: pools.every((p) => p.warm === p.desired) };
}

function nodeReport(pool: string, pod: ObservedPod, node: ObservedNode | undefined): NodeReport {
  const name = pod.spec?.nodeName ?? '';
  const label = node?.metadata?.labels?.[nodeLabelKey(pool)];
  const annotation: PoolAnnotation | undefined = parseAnnotation(node?.metadata?.annotations?.[nodeAnnotationKey(pool)]);
  const state: NodePoolState = label === NodeState.Warm ? NodeState.Warm : label === NodeState.Partial ? NodeState.Partial : 'cold';
  // The pod's own status is fresher than the annotation for images still failing now.
  const live = (pod.status?.containerStatuses ?? [])
    .filter((c) => c.state?.waiting?.reason !== undefined && PULL_FAILURE_REASONS.has(c.state.waiting.reason))
    .map((c) => {
      const message = c.state?.waiting?.message;
      return { image: c.image, reason: c.state?.waiting?.reason ?? '', ...(message === undefined ? {} : { message }) };
    });
  const failing = live.length > 0 ? live : (annotation?.failing ?? []).map((f) => ({ ...f }));
  return {
    node: name,
    state,
    images: annotation?.images ?? pod.status?.containerStatuses?.length ?? 0,
    ...(annotation?.present === undefined ? {} : { present: annotation.present }),
    ...(annotation?.ttwSeconds === undefined ? {} : { timeToWarmSeconds: annotation.ttwSeconds }),
    failing: [...failing].sort((a, b) => (a.image < b.image ? -1 : 1)),
  };
}

/** Output formats of `prewarm status`. */
export type StatusFormat = 'table' | 'wide' | 'json' | 'yaml';

/** Renders the report as text tables: one line per pool, and per node with `wide`. */
export function renderTable(report: StatusReport, wide: boolean): string {
  const rows: string[][] = [['NAMESPACE', 'POOL', 'DESIRED', 'WARM', 'PARTIAL', 'COLD']];
  for (const p of report.pools) rows.push([p.namespace, p.pool, String(p.desired), String(p.warm), String(p.partial), String(p.cold)]);
  let out = table(rows);
  const nodeRows: string[][] = [['POOL', 'NODE', 'STATE', 'IMAGES', 'TIME-TO-WARM', 'FAILING']];
  for (const p of report.pools) {
    for (const n of p.nodes) {
      // Without `wide`, only nodes that need attention are listed.
      if (!wide && n.state === NodeState.Warm) continue;
      const images = n.present === undefined ? String(n.images) : `${n.present}/${n.images}`;
      const ttw = n.timeToWarmSeconds === undefined ? '-' : `${n.timeToWarmSeconds}s`;
      const failing = n.failing.length === 0 ? '-' : n.failing.map((f) => `${f.image} (${f.reason})`).join(', ');
      nodeRows.push([p.pool, n.node, n.state, images, ttw, failing]);
    }
  }
  if (nodeRows.length > 1) out += `\n${table(nodeRows)}`;
  return out;
}

function table(rows: readonly string[][]): string {
  const widths = rows[0]?.map((_, i) => rows.reduce((w, r) => Math.max(w, (r[i] ?? '').length), 0)) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('   ')).join('\n') + '\n';
}
