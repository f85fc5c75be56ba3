/** The decisions of pool.ts and gate.ts as node patches, each with a patch type safe for concurrent writers. */
import type { ReconcilerConfig } from '../contract/sidecar-env.js';
import type { KNode } from './kube-types.js';
import type { PoolDecision } from './pool.js';

/**
 * JSON patch removing every taint with `key`, each guarded by a `test` of the taint at its index, so
 * a concurrent change fails the patch instead of removing the wrong taint. Undefined when none.
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

/** Strategic-merge patch setting (or, with null, removing) our label and annotation; other pools' keys untouched. */
export function metadataPatch(config: ReconcilerConfig, d: Pick<PoolDecision, 'label' | 'annotation'>): object | undefined {
  if (d.label === undefined && d.annotation === undefined) return undefined;
  return {
    metadata: {
      ...(d.label !== undefined ? { labels: { [config.nodeLabelKey]: d.label } } : {}),
      ...(d.annotation !== undefined ? { annotations: { [config.nodeAnnotationKey]: d.annotation } } : {}),
    },
  };
}
