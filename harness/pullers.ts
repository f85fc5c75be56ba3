/**
 * Burst pullers seen from outside: the ones left on a node whose pool is already warm or partial,
 * which the DaemonSet controller should have removed (their node affinity is `NotIn [warm,
 * partial]`). Checked after every e2e test (test/e2e/setup.ts).
 */
import { NodeState } from '../src/contract/names.js';
import { poolOf, pullersQuery } from '../src/contract/roles.js';
import { nodeLabelKey } from '../src/contract/identity.js';
import type { Kube, KubeObject } from './kube.js';
import { pollUntil } from './time.js';

/** The burst puller pods of `pool` in `namespace` bound to `node` (any pool's, without `pool`). */
export async function pullersOnNode(kube: Kube, namespace: string, node: string, pool?: string): Promise<KubeObject[]> {
  const l = await kube.list(`/api/v1/namespaces/${namespace}/pods`, {
    labelSelector: pullersQuery(pool),
    fieldSelector: `spec.nodeName=${node}`,
  });
  return l.items;
}

/** `namespace/pod on node (state)` for every puller pod on a node its pool marks warm or partial. */
export async function pullersOnMarkedNodes(kube: Kube): Promise<string[]> {
  const [pods, nodes] = await Promise.all([kube.list('/api/v1/pods', { labelSelector: pullersQuery() }), kube.list('/api/v1/nodes')]);
  const labels = new Map(nodes.items.map((n) => [n.metadata.name, n.metadata.labels ?? {}]));
  const left: string[] = [];
  for (const p of pods.items) {
    const node = (p.spec as { nodeName?: string } | undefined)?.nodeName;
    const pool = poolOf(p.metadata.labels);
    if (node === undefined || pool === undefined) continue;
    const state = labels.get(node)?.[nodeLabelKey(pool)];
    if (state === NodeState.Warm || state === NodeState.Partial)
      left.push(`${p.metadata.namespace ?? ''}/${p.metadata.name} on ${node} (${state})`);
  }
  return left;
}

/**
 * Waits up to `boundMs` for no puller to be left on a warm or partial node (the controller and the
 * kubelet need a few seconds to remove one) and returns what is still left then.
 */
export async function settledPullersOnMarkedNodes(kube: Kube, boundMs = 30_000): Promise<string[]> {
  let left: string[] = [];
  await pollUntil(
    async () => {
      left = await pullersOnMarkedNodes(kube);
      return left.length === 0;
    },
    Date.now() + boundMs,
    1000,
  );
  return left;
}
