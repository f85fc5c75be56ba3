/**
 * The benchmarks' real nodes and cluster: join and leave through the harness, and a cluster that
 * is reused when running and stopped again when the benchmark started it.
 */
import { addNode, down, isUp, removeNode, up } from '../../harness/cluster/cluster.js';
import type { CniStandInOptions } from '../../harness/cluster/cni-stand-in.js';
import { loadSpec } from '../../harness/cluster/node.js';
import type { NodeTimes, NodeWatch } from '../../harness/nodes.js';
import { log } from './stats.js';

/** The kubelet's image pulls: one at a time for the whole node (the upstream default), or in parallel. */
export type KubeletKind = 'parallel' | 'serial';
export const KUBELET_KINDS: readonly KubeletKind[] = ['parallel', 'serial'];

/** Tells this run's nodes from any earlier run's (base 36 of the time, 4 characters). */
const RUN_ID = Date.now().toString(36).slice(-4);
let joined = 0;

/**
 * A node name never used before in this cluster: `<tag>-<run>-<n>`. A reused name would inherit
 * the pods still bound to the earlier node of that name (its namespace being deleted in the
 * background): its kubelet runs them, and they show in the new node's figures.
 */
export function freshNodeName(tag: string): string {
  const name = `${tag}-${RUN_ID}-${++joined}`;
  if (name.length > 20) throw new Error(`node name ${name} is too long (tag ${tag})`);
  return name;
}

/** Joins a real node whose kubelet registers it with `labels` (kubelet --node-labels). */
export async function join(
  watch: NodeWatch,
  name: string,
  labels: Record<string, string>,
  kubelet: KubeletKind = 'parallel',
  /** Join without a CNI config: the harness's CNI stand-in writes it (the network start-up window). */
  cniStandIn?: CniStandInOptions,
  /** Images the node starts with, as a node image that carries them. */
  preloadImages?: readonly string[],
): Promise<NodeTimes> {
  if (loadSpec(name)) await removeNode(name).catch(() => undefined);
  const t = watch.expect(name);
  await addNode(name, {
    labels,
    wait: false,
    serializeImagePulls: kubelet === 'serial',
    ...(cniStandIn ? { cniStandIn } : {}),
    ...(preloadImages?.length ? { preloadImages } : {}),
  });
  return t;
}

/** Removes a real node the benchmark joined, if it is still there. */
export async function leave(name: string): Promise<void> {
  if (loadSpec(name)) await removeNode(name);
}

/** Reuses a running harness cluster or starts one (without kwok); true when this call started it. */
export async function ensureCluster(): Promise<boolean> {
  if (await isUp()) return false;
  log('no harness cluster up: starting one (stopped again at the end unless BENCH_KEEP_CLUSTER=1)');
  await up({ kwok: false });
  return true;
}

/** Stops the cluster if {@link ensureCluster} started it (a running one is left as found). */
export async function releaseCluster(started: boolean): Promise<void> {
  if (!started || process.env['BENCH_KEEP_CLUSTER'] === '1') return;
  log('stopping the cluster this run started');
  await down();
}
