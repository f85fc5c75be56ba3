/** Builders of pods, nodes and pools for the reconciler's unit tests. */
import { renderSidecarEnv, resolveSidecarEnv, type ReconcilerConfig } from '../../src/contract/sidecar-env.js';
import { nodeAnnotationKey, nodeLabelKey } from '../../src/contract/identity.js';
import type { ContainerStatus } from '../../src/contract/pod-status.js';
import type { KNode, KPod, KTaint } from '../../src/reconciler/kube-types.js';
import type { Observed } from '../../src/reconciler/pool.js';
import { placementOf, type NodeSelector, type Toleration } from '../../src/contract/placement.js';
import type { PoolEntry, PoolsFile } from '../../src/contract/pools-file.js';
import { DEFAULT_GATE_TAINT_KEY, DEFAULTS } from '../../src/contract/names.js';

export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const iso = (sec: number): string => new Date(T0 + sec * 1000).toISOString();
/** ms since epoch of `sec` seconds after {@link T0}. */
export const at = (sec: number): number => T0 + sec * 1000;
export const SIDECAR = 'prewarm-reconciler';
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
  return {
    metadata: {
      name: 'node-a',
      uid: 'uid-node-a',
      resourceVersion: '7',
      creationTimestamp: iso(over.createdAt ?? 0),
      ...(over.labels ? { labels: over.labels } : {}),
      ...(over.annotations ? { annotations: over.annotations } : {}),
    },
    spec: { ...(over.taints ? { taints: over.taints } : {}) },
    status: {
      conditions:
        readyAt === null
          ? [{ type: 'Ready', status: 'False', lastTransitionTime: iso(0) }]
          : [{ type: 'Ready', status: 'True', lastTransitionTime: iso(readyAt) }],
    },
  };
}

export const digest = (c: string): string => `sha256:${c.repeat(64).slice(0, 64)}`;

/** Container status shorthands. */
export const st = {
  running: (name: string, image: string, at = 30, d = 'a'): ContainerStatus => ({
    name,
    image,
    imageID: `${image.split(':')[0]}@${digest(d)}`,
    state: { running: { startedAt: iso(at) } },
  }),
  creating: (name: string): ContainerStatus => ({ name, imageID: '', state: { waiting: { reason: 'ContainerCreating' } } }),
  waiting: (name: string, reason: string, message = `${reason} happened`): ContainerStatus => ({
    name,
    imageID: '',
    state: { waiting: { reason, message } },
  }),
  crashed: (name: string, image: string, at = 40): ContainerStatus => ({
    name,
    image,
    imageID: '',
    state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off' } },
    lastState: { terminated: { exitCode: 1, startedAt: iso(at), finishedAt: iso(at + 1) } },
  }),
  terminated: (name: string, at = 50): ContainerStatus => ({
    name,
    imageID: '',
    state: { terminated: { exitCode: 0, startedAt: iso(at) } },
  }),
};

/** A pull pod with images i1..iN (containers c1..cN), the sidecar, and the given statuses. */
export function pod(
  images: string[],
  statuses: ContainerStatus[],
  over: { createdAt?: number; deleting?: boolean; initStatuses?: ContainerStatus[] } = {},
): KPod {
  return {
    metadata: {
      name: 'pull-a-xyz',
      namespace: 'prewarm',
      uid: 'uid-pod',
      creationTimestamp: iso(over.createdAt ?? 0),
      ...(over.deleting ? { deletionTimestamp: iso(1000) } : {}),
    },
    spec: {
      nodeName: 'node-a',
      initContainers: [
        { name: 'prewarm-init', image: 'reg/busybox:1' },
        { name: SIDECAR, image: 'reg/prewarm:1', restartPolicy: 'Always' },
      ],
      containers: images.map((image, i) => ({ name: `c${i + 1}`, image, imagePullPolicy: 'Always' })),
    },
    status: {
      phase: 'Running',
      ...(over.initStatuses ? { initContainerStatuses: over.initStatuses } : {}),
      containerStatuses: statuses,
    },
  };
}

/** A burst puller of the pool with `images`: like {@link pod}, without the sidecar. */
export function pullerPod(name: string, images: string[], statuses: ContainerStatus[], over: { deleting?: boolean } = {}): KPod {
  const p = pod(images, statuses, over);
  return {
    ...p,
    metadata: { ...p.metadata, name, uid: `uid-${name}` },
    spec: { ...p.spec, initContainers: [{ name: 'prewarm-init', image: 'reg/busybox:1' }] },
  };
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
