/**
 * Workload pods for tests and benchmarks: a user's pod that runs cached images. Stand-in images
 * hold no program, so an init container copies the static busybox of a helper image into an
 * emptyDir (as prewarm's own pull pods do) and each image's container sleeps with it. Restricted
 * Pod Security compliant.
 */
import { HELPER_BINARY, HELPER_MOUNT, HELPER_SOURCE } from '../src/synth/pull-daemonset.js';
import type { KubeObject } from './kube.js';

/** What a workload pod is made of. */
export interface WorkloadOptions {
  readonly name: string;
  readonly namespace: string;
  /** The one node it may run on (a `kubernetes.io/hostname` node selector). */
  readonly node: string;
  /** Image with a static busybox at /bin/busybox (a pool's helper image). */
  readonly helper: string;
  /** The images it runs, one container each, in this order. */
  readonly images: readonly string[];
  /** Pull secrets of the pod. @default none */
  readonly pullSecrets?: readonly string[];
}

/** A pod running `images` on `node` (no toleration: a gated node holds it off until the gate opens). */
export function workloadPod(o: WorkloadOptions): KubeObject {
  const security = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
  const mount = [{ name: 'helper', mountPath: HELPER_MOUNT }];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: o.name, namespace: o.namespace },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': o.node },
      terminationGracePeriodSeconds: 0,
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      ...(o.pullSecrets?.length ? { imagePullSecrets: o.pullSecrets.map((name) => ({ name })) } : {}),
      volumes: [{ name: 'helper', emptyDir: {} }],
      initContainers: [
        {
          name: 'helper',
          image: o.helper,
          imagePullPolicy: 'IfNotPresent',
          command: [HELPER_SOURCE, 'cp', HELPER_SOURCE, HELPER_BINARY],
          volumeMounts: mount,
          securityContext: security,
        },
      ],
      containers: o.images.map((image, i) => ({
        name: `app-${i + 1}`,
        image,
        imagePullPolicy: 'IfNotPresent',
        command: [HELPER_BINARY, 'sleep', '3600'],
        volumeMounts: mount,
        securityContext: security,
      })),
    },
  };
}
