/**
 * The benchmarks' real nodes and cluster: join and leave through the harness, and a cluster that
 * is reused when running and stopped again when the benchmark started it.
 */
import { addNode, down, isUp, removeNode, up } from '../../harness/cluster/cluster.js';
import { loadSpec } from '../../harness/cluster/node.js';
import type { NodeTimes, NodeWatch } from '../../harness/nodes.js';
import { log } from './stats.js';

/** Joins a real node whose kubelet registers it with `labels` (kubelet --node-labels). */
export async function join(watch: NodeWatch, name: string, labels: Record<string, string>): Promise<NodeTimes> {
  if (loadSpec(name)) await removeNode(name).catch(() => undefined);
  const t = watch.expect(name);
  await addNode(name, { labels, wait: false });
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
