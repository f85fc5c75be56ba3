/**
 * Patch encoding: the decisions of pool.ts and gate.ts as request bodies for the node, each with
 * the patch type that makes concurrent writers safe.
 */
import type { ReconcilerConfig } from '../contract/sidecar-env.js';
import type { KNode } from './kube-types.js';
import type { PoolDecision } from './pool.js';

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
