/** Doctor inputs for the doctor tests: DaemonSets as synth renders them, pods, nodes, kubelet configs. */
import {
  DEFAULTS,
  ENV,
  LABEL_MANAGED_BY,
  LABEL_POOL,
  LABEL_POOL_MEMBER,
  LABEL_PULLER,
  SIDECAR_CONTAINER,
} from '../../src/contract/names.js';
import type { ClusterRead, DoctorDaemonSet, DoctorInput, DoctorNode, EarlyPullBinding, KubeletConfig } from '../../src/doctor/input.js';
import { type Finding } from '../../src/doctor/report.js';
import type { Pod } from '../../src/contract/pod-status.js';
import { HELPER_CONTAINER } from '../../src/contract/names.js';
import { holderPod as clusterHolderPod, node as clusterNode } from '../fixtures/cluster.js';

export const NOW = Date.parse('2026-12-03T12:00:00Z');
export const GATE = 'prewarm.dev/warming';
export const ok = <T>(value: T): ClusterRead<T> => ({ kind: 'ok', value });
export const denied: ClusterRead<never> = { kind: 'denied', message: '403: forbidden' };

export function holder(
  id: string,
  opts: { lanes?: number; pullers?: number; gate?: string; deadline?: number; secrets?: string[]; sidecar?: boolean; early?: boolean } = {},
): DoctorDaemonSet[] {
  const labels = { [LABEL_MANAGED_BY]: 'prewarm', [LABEL_POOL]: id, [LABEL_POOL_MEMBER]: id };
  const env = [
    { name: ENV.gateTaintKey, value: opts.gate ?? GATE },
    { name: ENV.deadlineSeconds, value: String(opts.deadline ?? DEFAULTS.deadlineSeconds) },
  ];
  const rolledOut = { desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, observedGeneration: 1 };
  const ds: DoctorDaemonSet = {
    metadata: { name: `prewarm-${id}`, namespace: 'prewarm', labels, generation: 1 },
    spec: {
      selector: { matchLabels: { [LABEL_POOL]: id } },
      template: {
        spec: {
          // As synth renders it: the sidecar is a native sidecar (an init container, restartPolicy
          // Always) ahead of the helper.
          ...(opts.sidecar === false
            ? { initContainers: [{ name: HELPER_CONTAINER }] }
            : { initContainers: [{ name: SIDECAR_CONTAINER, env, restartPolicy: 'Always' }, { name: HELPER_CONTAINER }] }),
          containers: [{ name: 'img' }],
          ...(opts.secrets ? { imagePullSecrets: opts.secrets.map((name) => ({ name })) } : {}),
        },
      },
    },
    status: rolledOut,
  };
  // A pool of fewer images than lanes has one puller per image: `pullers` says how many there are.
  const pullers = Array.from({ length: opts.pullers ?? ((opts.lanes ?? 1) > 1 ? (opts.lanes ?? 1) : 0) }, (_, i) => ({
    metadata: {
      name: `prewarm-${id}-puller-${i + 1}`,
      namespace: 'prewarm',
      labels: { [LABEL_MANAGED_BY]: 'prewarm', [LABEL_PULLER]: `${id}-${i + 1}`, [LABEL_POOL_MEMBER]: id },
      generation: 1,
    },
    spec: {
      selector: { matchLabels: { [LABEL_PULLER]: `${id}-${i + 1}` } },
      // As synth renders the pullers of a pool with spec.earlyPull.
      ...(opts.early === true ? { template: { spec: { hostNetwork: true, containers: [{ name: 'img' }] } } } : {}),
    },
    status: rolledOut,
  }));
  return [ds, ...pullers];
}

/** Pool `id`'s holder pod on `node`, its sidecar running, held behind its probe, or unpullable. */
export function holderPod(id: string, node: string, sidecar: 'running' | 'held' | 'ErrImagePull' = 'running'): Pod {
  const sidecarImage = 'ghcr.io/prewarm-dev/reconciler:0.1.0';
  return clusterHolderPod({
    pool: id,
    node,
    // Only the statuses: doctor's disk budget would count a listed sidecar image as pinned.
    sidecar: false,
    helper: false,
    createdAt: new Date(NOW - 60_000),
    phase: sidecar === 'running' ? 'Running' : 'Pending',
    conditions: [{ type: 'Ready', status: sidecar === 'running' ? 'True' : 'False' }],
    initStatuses: [
      {
        name: SIDECAR_CONTAINER,
        image: sidecarImage,
        ready: sidecar === 'running',
        state:
          sidecar === 'ErrImagePull'
            ? { waiting: { reason: 'ErrImagePull', message: 'not found' } }
            : { running: { startedAt: new Date(NOW - 30_000) } },
      },
    ],
  });
}

/** A node with `taints` (NoSchedule), created `createdAgoS` before {@link NOW}, one listed image. */
export function node(name: string, opts: { taints?: string[]; createdAgoS?: number; disk?: string; imageBytes?: number } = {}): DoctorNode {
  return clusterNode(name, {
    createdAt: new Date(NOW - (opts.createdAgoS ?? 3600) * 1000),
    taints: (opts.taints ?? []).map((key) => ({ key, effect: 'NoSchedule' })),
    capacity: { 'ephemeral-storage': opts.disk ?? '100Gi' },
    allocatable: { pods: '110' },
    images: [{ sizeBytes: opts.imageBytes ?? 2 ** 30 }],
  });
}

/** The early pullers' policy binding as synth writes it, covering `namespaces`. */
export function earlyBinding(namespaces: string[]): ClusterRead<EarlyPullBinding> {
  return ok({
    spec: {
      matchResources: {
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] },
      },
    },
  });
}

export function input(over: Partial<DoctorInput> = {}): DoctorInput {
  return {
    now: NOW,
    version: ok({ major: '1', minor: '36', gitVersion: 'v1.36.5' }),
    policy: ok(true),
    policyBinding: ok(true),
    earlyPullPolicy: ok(true),
    earlyPullPolicyBinding: earlyBinding(['prewarm']),
    daemonSets: ok(holder('gpu')),
    pods: ok([holderPod('gpu', 'n1')]),
    nodes: ok([node('n1')]),
    secrets: new Map(),
    kubeletConfigs: new Map([
      ['n1', ok<KubeletConfig>({ serializeImagePulls: false, registerWithTaints: [{ key: GATE, effect: 'NoSchedule' }] })],
    ]),
    imageFs: new Map([['n1', ok({ capacityBytes: 100 * 2 ** 30, usedBytes: 10 * 2 ** 30, availableBytes: 90 * 2 ** 30 })]]),
    imageSizes: new Map(),
    ...over,
  };
}

export const find = (fs: readonly Finding[], check: string, scope?: string): Finding[] =>
  fs.filter((f) => f.check === check && (scope === undefined || f.scope === scope));
