/**
 * Charts: one per namespace holding that namespace's pools, and one without a namespace for
 * cluster-scoped objects (cdk8s stamps a chart's namespace onto every object in it, cluster-scoped
 * ones included: cdk8s-team/cdk8s-core#731).
 */
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import type { Construct } from 'constructs';
import type { Bundle, Pool } from '../imagecache/model.js';
import { ReconcilerAccess } from './access.js';
import {
  DEFAULT_GATE_TAINT_KEY,
  DEFAULTS,
  LABEL_MANAGED_BY,
  LABEL_PART_OF,
  MANAGED_BY,
  POOLS_CONFIGMAP,
  POOLS_FILE,
} from '../contract/names.js';
import { renderPoolsFile, type PoolEntry } from '../contract/pools-file.js';
import { nodeLabelKey, SERVICE_ACCOUNT } from './naming.js';
import { PullDaemonSet, type ReconcilerProps } from './pull-daemonset.js';
import { NAMESPACE_POD_SECURITY } from './security.js';

/** Namespaces that exist in every cluster; we never emit (and so never own or prune) them. */
const FOREIGN_NAMESPACES = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);

const COMMON_LABELS = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_PART_OF]: 'prewarm' };

/** Props of {@link NamespaceChart}. */
export interface NamespaceChartProps {
  readonly namespace: string;
  /** The pools of this namespace. */
  readonly pools: readonly Pool[];
  /** Every pool of the bundle, written into the pools ConfigMap for the sidecars. */
  readonly allPools: readonly Pool[];
  /**
   * The sidecar reconciler.
   * @default - no sidecar
   */
  readonly reconciler?: ReconcilerProps;
}

/** A namespace's objects: the Namespace, the pull DaemonSets, and what the sidecars need. */
export class NamespaceChart extends Chart {
  /** The pull DaemonSets, by pool id. */
  private readonly daemonSets = new Map<string, PullDaemonSet>();

  constructor(scope: Construct, id: string, props: NamespaceChartProps) {
    super(scope, id, { namespace: props.namespace, disableResourceNameHashes: true });
    if (props.reconciler !== undefined) {
      new kplus.ConfigMap(this, 'pools', {
        metadata: { name: POOLS_CONFIGMAP, labels: COMMON_LABELS },
        data: { [POOLS_FILE]: renderPoolsFile(props.allPools.map(poolEntryOf)) },
      });
    }
    for (const pool of props.pools) {
      const ds = new PullDaemonSet(this, `pool-${pool.key}`, {
        pool,
        ...(props.reconciler === undefined ? {} : { reconciler: props.reconciler }),
      });
      this.daemonSets.set(ds.poolId, ds);
    }
  }

  /** Pool ids of this chart, sorted. */
  get poolIds(): string[] {
    return [...this.daemonSets.keys()].sort();
  }
}

/** A pool as the sidecars see it in pools.json: its placement is the one its DaemonSet renders. */
export function poolEntryOf(pool: Pool): PoolEntry {
  return {
    id: pool.id,
    namespace: pool.namespace,
    nodeLabelKey: nodeLabelKey(pool.id),
    placement: pool.placement,
    gateTaintKey: pool.settings.gate?.taintKey ?? '',
    deadlineSeconds: pool.settings.gate?.deadlineSeconds ?? DEFAULTS.deadlineSeconds,
  };
}

/** Props of {@link ClusterChart}. */
export interface ClusterChartProps {
  readonly bundle: Bundle;
  /**
   * Whether pull pods run the sidecar, which then needs its ServiceAccounts, RBAC and admission
   * policy.
   * @default false
   */
  readonly reconciler?: boolean;
}

/**
 * Cluster-scoped objects, in a chart that has no namespace: the Namespaces (labelled Pod Security
 * restricted), and the sidecar's RBAC and admission policy.
 */
export class ClusterChart extends Chart {
  constructor(scope: Construct, id: string, props: ClusterChartProps) {
    super(scope, id, { disableResourceNameHashes: true });
    for (const namespace of props.bundle.namespaces) {
      // Namespaces every cluster has are never emitted: owning one would let a prune delete it.
      if (FOREIGN_NAMESPACES.has(namespace)) continue;
      new kplus.Namespace(this, `namespace-${namespace}`, {
        metadata: { name: namespace, labels: { ...COMMON_LABELS, ...NAMESPACE_POD_SECURITY } },
      });
    }
    if (props.reconciler === true) {
      const gateKeys = [...new Set(props.bundle.pools.flatMap((p) => (p.settings.gate === undefined ? [] : [p.settings.gate.taintKey])))];
      new ReconcilerAccess(this, 'reconciler-access', {
        namespaces: props.bundle.namespaces,
        serviceAccountName: SERVICE_ACCOUNT,
        // Without any gating pool there is no taint to lift; the default key keeps the policy valid.
        gateTaintKeys: gateKeys.length > 0 ? gateKeys : [DEFAULT_GATE_TAINT_KEY],
      });
    }
  }
}
