/** The reconciler's unit-test defaults (pool gpu on node-a) over the shared cluster fixtures. */
import { holderPod, iso, node as clusterNode, pullerPod as clusterPullerPod, st, T0 } from '../fixtures/cluster.js';
import { renderSidecarEnv, resolveSidecarEnv, type ReconcilerConfig } from '../../src/contract/sidecar-env.js';
import { nodeAnnotationKey, nodeLabelKey } from '../../src/contract/identity.js';
import type { ContainerStatus } from '../../src/contract/pod-status.js';
import type { KNode, KPod, KTaint } from '../../src/reconciler/kube-types.js';
import type { Observed } from '../../src/reconciler/pool.js';
import { placementOf, type NodeSelector, type Toleration } from '../../src/contract/placement.js';
import type { PoolEntry, PoolsFile } from '../../src/contract/pools-file.js';
import { DEFAULT_GATE_TAINT_KEY, DEFAULTS, SIDECAR_CONTAINER } from '../../src/contract/names.js';

export { T0, iso, digest, st } from '../fixtures/cluster.js';
/** ms since epoch of `sec` seconds after {@link T0}. */
export const at = (sec: number): number => T0 + sec * 1000;
export const SIDECAR = SIDECAR_CONTAINER;
/** The images of the pool most tests use: containers c1 and c2. */
export const IMAGES = ['reg/a:1', 'reg/b:1'];

export function config(over: Partial<ReconcilerConfig> = {}): ReconcilerConfig {
  return {
    nodeName: 'node-a',
    podName: 'pull-a-xyz',
    podNamespace: 'prewarm',
    poolId: 'gpu',
    nodeLabelKey: 'prewarm.dev/gpu',
    nodeAnnotationKey: 'status.prewarm.dev/gpu',
    gateTaintKey: DEFAULT_GATE_TAINT_KEY,
    deadlineSeconds: 600,
    refreshSeconds: 0,
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    ...over,
  };
}

/** A pool entry; its placement is built from `nodeSelector` and `tolerations` as synthesis does. */
export function pool(
  id: string,
  over: Partial<Omit<PoolEntry, 'placement'>> & { nodeSelector?: NodeSelector; tolerations?: readonly Toleration[] } = {},
): PoolEntry {
  const { nodeSelector = {}, tolerations = [], ...rest } = over;
  const gateTaintKey = rest.gateTaintKey ?? DEFAULT_GATE_TAINT_KEY;
  return {
    id,
    namespace: 'prewarm',
    nodeLabelKey: `prewarm.dev/${id}`,
    gateTaintKey,
    ...rest,
    placement: placementOf(nodeSelector, tolerations, gateTaintKey),
  };
}

export const pools = (...p: PoolEntry[]): PoolsFile => ({ pools: p });

export const gate: KTaint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };

/** Node `node-a`, Ready at 10 s unless `readyAt` says otherwise (null: not Ready). */
export function node(
  over: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    taints?: KTaint[];
    readyAt?: number | null;
    createdAt?: number;
  } = {},
): KNode {
  const readyAt = over.readyAt === undefined ? 10 : over.readyAt;
  return clusterNode('node-a', {
    uid: 'uid-node-a',
    resourceVersion: '7',
    createdAt: iso(over.createdAt ?? 0),
    ...(over.labels ? { labels: over.labels } : {}),
    ...(over.annotations ? { annotations: over.annotations } : {}),
    ...(over.taints ? { taints: over.taints } : {}),
    readyAt: readyAt === null ? null : iso(readyAt),
  });
}

/** Our holder pod `pull-a-xyz` on `node-a`, with images in containers c1..cN and the given statuses. */
export function pod(
  images: string[],
  statuses: ContainerStatus[],
  over: { createdAt?: number; deleting?: boolean; initStatuses?: ContainerStatus[] } = {},
): KPod {
  return holderPod({
    name: 'pull-a-xyz',
    uid: 'uid-pod',
    images,
    statuses,
    createdAt: iso(over.createdAt ?? 0),
    ...(over.deleting ? { deletedAt: iso(1000) } : {}),
    ...(over.initStatuses ? { initStatuses: over.initStatuses } : {}),
  });
}

/** A burst puller of the pool with `images`: like {@link pod}, without the sidecar. */
export function pullerPod(name: string, images: string[], statuses: ContainerStatus[], over: { deleting?: boolean } = {}): KPod {
  return clusterPullerPod(1, {
    name,
    uid: `uid-${name}`,
    images,
    statuses,
    createdAt: iso(0),
    ...(over.deleting ? { deletedAt: iso(1000) } : {}),
  });
}

/** What a reconcile observes, 60 s after T0: pool gpu still pulling both images on a gated node. */
export function observed(over: Partial<Observed> = {}): Observed {
  return {
    pod: pod(IMAGES, [st.creating('c1'), st.creating('c2')]),
    node: node({ taints: [gate] }),
    pools: pools(pool('gpu')),
    config: config(),
    now: at(60),
    sidecarName: SIDECAR,
    ...over,
  };
}

/** The downward API fields of the sidecar's pod in these tests. */
export const SIDECAR_FIELDS: Readonly<Record<string, string>> = {
  'spec.nodeName': 'n1',
  'metadata.name': 'p1',
  'metadata.namespace': 'ns',
};

/** The sidecar's environment as synthesis renders it for pool `gpu` without a gate, downward API values filled in. */
export const SIDECAR_ENV: Readonly<Record<string, string>> = resolveSidecarEnv(
  renderSidecarEnv({
    poolId: 'gpu',
    nodeLabelKey: nodeLabelKey('gpu'),
    nodeAnnotationKey: nodeAnnotationKey('gpu'),
    gateTaintKey: '',
    deadlineSeconds: DEFAULTS.deadlineSeconds,
    refreshSeconds: DEFAULTS.refreshSeconds,
    metricsPort: DEFAULTS.metricsPort,
  }),
  SIDECAR_FIELDS,
);
