/**
 * One chart per namespace, and one without a namespace for cluster-scoped objects (cdk8s stamps a
 * chart's namespace onto every object in it: cdk8s-team/cdk8s-core#731).
 */
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import type { Construct } from 'constructs';
import { checkDns1123Label } from '../imagecache/k8s-validation.js';
import type { Bundle, Pool } from '../imagecache/model.js';
import { ReconcilerAccess } from './access.js';
import {
  DEFAULT_GATE_TAINT_KEY,
  LABEL_MANAGED_BY,
  LABEL_PART_OF,
  MANAGED_BY,
  POOLS_CONFIGMAP,
  POOLS_FILE,
  type SleeperArch,
} from '../contract/names.js';
import { renderPoolsFile, type PoolEntry } from '../contract/pools-file.js';
import { nodeLabelKey } from '../contract/identity.js';
import { SERVICE_ACCOUNT } from '../contract/access-names.js';
import { pullerLanes, SIDECAR_IMAGE_PULLER } from './lanes.js';
import { DEFAULT_HELPER_IMAGE, deadlineSecondsOf, PullDaemonSet, refreshes, type ReconcilerProps } from './pull-daemonset.js';
import { EARLY_PULL_NAMESPACE_POD_SECURITY, NAMESPACE_POD_SECURITY } from './security.js';
import { EarlyPullAdmission, earlyPullNamespaces } from './early-pull.js';
import { ReconcilerPodMonitor } from './pod-monitor.js';
import { ReconcilerNetworkPolicy, type ReconcilerNetworkPolicyProps } from './network-policy.js';
import { sleeperArchOf, sleeperConfigMap } from './sleeper.js';
import { Failsafe } from './failsafe.js';
import { FAILSAFE_DEFAULT_GRACE_SECONDS } from '../contract/failsafe.js';

/** Namespaces that exist in every cluster; we never emit (and so never own or prune) them. */
const FOREIGN_NAMESPACES = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);

/**
 * Keep GitOps tools from ever deleting a Namespace we emit but do not own, on prune or on delete:
 * Argo CD's `Prune=false`/`Delete=false`, Flux's `prune: disabled` (lowercase: older releases
 * compare exactly).
 */
export const SHARED_NAMESPACE_ANNOTATIONS: Readonly<Record<string, string>> = {
  'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false',
  'kustomize.toolkit.fluxcd.io/prune': 'disabled',
};

/** Why `namespace` cannot be owned (invalid, or one every cluster has), or undefined. */
export function ownedNamespaceError(namespace: string): string | undefined {
  const invalid = checkDns1123Label(namespace);
  if (invalid !== undefined) return `namespace "${namespace}" is not a valid namespace name: ${invalid}`;
  if (FOREIGN_NAMESPACES.has(namespace)) return `namespace "${namespace}" exists in every cluster; prewarm never owns it`;
  return undefined;
}

const COMMON_LABELS = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_PART_OF]: 'prewarm' };

/** Props of {@link NamespaceChart}. */
export interface NamespaceChartProps {
  readonly namespace: string;
  readonly pools: readonly Pool[];
  /** Every pool of the bundle, written into the pools ConfigMap for the sidecars. */
  readonly allPools: readonly Pool[];
  /** The sidecar reconciler. @default - no sidecar */
  readonly reconciler?: ReconcilerProps;
  /** Run the cluster's fail-safe here (see {@link failsafeNamespace}); only with a reconciler. @default false */
  readonly failsafe?: boolean;
  /** Emit a PodMonitor (needs the Prometheus Operator's CRDs); only with a reconciler. @default false */
  readonly podMonitor?: boolean;
  /** Admit only these to the sidecars' metrics port; only with a reconciler. @default - none */
  readonly networkPolicy?: ReconcilerNetworkPolicyProps;
  /** See `SynthOptions.nodeArch`. @default - only pools that select on `kubernetes.io/arch` run the sleeper */
  readonly nodeArch?: SleeperArch;
  /** `Bundle.imageBytes`: a pool whose every image is here splits its pullers by bytes. @default - every pool splits by image count */
  readonly imageBytes?: ReadonlyMap<string, number>;
  /** See `SynthOptions.helperImage`. @default DEFAULT_HELPER_IMAGE */
  readonly helperImage?: string;
}

/** A namespace's objects: the Namespace, the pull DaemonSets, and what the sidecars need. */
export class NamespaceChart extends Chart {
  constructor(scope: Construct, id: string, props: NamespaceChartProps) {
    super(scope, id, { namespace: props.namespace, disableResourceNameHashes: true });
    if (props.reconciler !== undefined) {
      new kplus.ConfigMap(this, 'pools', {
        metadata: { name: POOLS_CONFIGMAP, labels: COMMON_LABELS },
        data: { [POOLS_FILE]: renderPoolsFile(props.allPools.map(poolEntryOf)) },
      });
    }
    if (props.reconciler !== undefined && props.podMonitor === true) new ReconcilerPodMonitor(this, 'pod-monitor');
    if (props.reconciler !== undefined && props.networkPolicy !== undefined)
      new ReconcilerNetworkPolicy(this, 'network-policy', props.networkPolicy);
    if (props.reconciler !== undefined && props.failsafe === true)
      new Failsafe(this, 'failsafe', {
        image: props.reconciler.image,
        poolIds: props.allPools.map((p) => p.id),
        graceSeconds: props.reconciler.failsafeGraceSeconds ?? FAILSAFE_DEFAULT_GRACE_SECONDS,
      });
    // Immutable (the kubelet reads it once, never watches), so named by content: a change rolls pods.
    const sleeperMap = sleeperConfigMap();
    const arches = props.pools.map((pool) => sleeperArchOf(pool.placement.nodeSelector, props.nodeArch));
    if (arches.some((a) => a !== undefined))
      new kplus.ConfigMap(this, 'sleeper', {
        metadata: { name: sleeperMap.name, labels: COMMON_LABELS },
        binaryData: { ...sleeperMap.binaryData },
        immutable: true,
      });
    for (const [i, pool] of props.pools.entries()) {
      const arch = arches[i];
      const sleeper =
        arch === undefined
          ? { ...(props.helperImage === undefined ? {} : { helperImage: props.helperImage }) }
          : { sleeper: { arch, configMap: sleeperMap.name } };
      // Without the sidecar nothing would ever move pullers off a node: --no-reconciler has none.
      const lanes = pullerLanes(pool.images, props.reconciler === undefined ? 1 : pool.settings.lanes, props.imageBytes);
      new PullDaemonSet(this, `pool-${pool.id}`, {
        pool,
        ...(props.reconciler === undefined ? {} : { reconciler: props.reconciler }),
        ...sleeper,
      });
      // A pool id (a DNS label) has no '.', so no pool's construct id can equal a puller's.
      for (const puller of lanes) new PullDaemonSet(this, `pool-${pool.id}.puller-${puller.key}`, { pool, puller, ...sleeper });
      // Early pools pull the sidecar's image in the window too, on its own puller: behind any pool
      // image it would hold the sidecar back, and any pool image behind it would wait.
      const sidecarImage = pool.settings.earlyPull ? props.reconciler?.image : undefined;
      if (sidecarImage !== undefined && lanes.length > 0)
        new PullDaemonSet(this, `pool-${pool.id}.puller-${SIDECAR_IMAGE_PULLER.key}`, {
          pool,
          puller: SIDECAR_IMAGE_PULLER,
          ...sleeper,
          sidecarImage,
        });
    }
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
    deadlineSeconds: deadlineSecondsOf(pool),
  };
}

/** The fail-safe's namespace: the first owned, else the first not every cluster has, else the first. */
export function failsafeNamespace(namespaces: readonly string[], owned: readonly string[]): string | undefined {
  const sorted = [...namespaces].sort();
  return sorted.find((ns) => owned.includes(ns)) ?? sorted.find((ns) => !FOREIGN_NAMESPACES.has(ns)) ?? sorted[0];
}

/** Props of {@link ClusterChart}. */
export interface ClusterChartProps {
  readonly bundle: Bundle;
  /**
   * See `SynthOptions.ownedNamespaces`; every other namespace is emitted bare, with
   * {@link SHARED_NAMESPACE_ANNOTATIONS}.
   * @default - none
   */
  readonly ownedNamespaces?: readonly string[];
  /** Whether pull pods run the sidecar, which needs its RBAC and admission policy. @default false */
  readonly reconciler?: boolean;
  /** The invocation's helper image, canonical: the early-pull admission policy admits its binary. @default DEFAULT_HELPER_IMAGE */
  readonly helperImage?: string;
}

/**
 * Cluster-scoped objects: the Namespaces, and the sidecar's RBAC and admission policy. Every
 * namespace is emitted, so a fresh cluster applies and a prune never deletes one; only owned ones
 * get our labels and Pod Security, since others hold workloads we know nothing of.
 */
export class ClusterChart extends Chart {
  constructor(scope: Construct, id: string, props: ClusterChartProps) {
    super(scope, id, { disableResourceNameHashes: true });
    const owned = new Set(props.ownedNamespaces ?? []);
    for (const namespace of owned) {
      const invalid = ownedNamespaceError(namespace);
      if (invalid !== undefined) throw new Error(`ClusterChart: ${invalid}`);
    }
    // Only an owned namespace is relaxed for the early pullers' host network (checkEarlyPull).
    const early = earlyPullNamespaces(props.bundle.pools, props.reconciler === true);
    const unowned = early.filter((ns) => !owned.has(ns));
    if (unowned.length > 0)
      throw new Error(`ClusterChart: early-pull pools need a namespace prewarm owns; ${unowned.join(', ')} is not owned`);
    for (const namespace of props.bundle.namespaces) {
      // Namespaces every cluster has are never emitted: owning one would let a prune delete it.
      if (FOREIGN_NAMESPACES.has(namespace)) continue;
      const podSecurity = early.includes(namespace) ? EARLY_PULL_NAMESPACE_POD_SECURITY : NAMESPACE_POD_SECURITY;
      new kplus.Namespace(this, `namespace-${namespace}`, {
        metadata: owned.has(namespace)
          ? { name: namespace, labels: { ...COMMON_LABELS, ...podSecurity } }
          : { name: namespace, annotations: SHARED_NAMESPACE_ANNOTATIONS },
      });
    }
    if (early.length > 0)
      new EarlyPullAdmission(this, 'early-pull-admission', { namespaces: early, helperImage: props.helperImage ?? DEFAULT_HELPER_IMAGE });
    if (props.reconciler === true) {
      const failsafe = failsafeNamespace(props.bundle.namespaces, [...owned]);
      const gateKeys = [...new Set(props.bundle.pools.flatMap((p) => (p.settings.gate === undefined ? [] : [p.settings.gate.taintKey])))];
      new ReconcilerAccess(this, 'reconciler-access', {
        namespaces: props.bundle.namespaces,
        serviceAccountName: SERVICE_ACCOUNT,
        // Without any gating pool there is no taint to lift; the default key keeps the policy valid.
        gateTaintKeys: gateKeys.length > 0 ? gateKeys : [DEFAULT_GATE_TAINT_KEY],
        refreshNamespaces: [...new Set(props.bundle.pools.filter(refreshes).map((p) => p.namespace))],
        ...(failsafe === undefined ? {} : { failsafeNamespace: failsafe }),
      });
    }
  }
}
