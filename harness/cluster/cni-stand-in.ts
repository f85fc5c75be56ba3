/**
 * A CNI stand-in: the network start-up window of a cloud node, made real.
 *
 * A node added with one starts its containerd with an empty CNI config folder, so the runtime
 * reports `NetworkReady=false` ("cni plugin not initialized"), the kubelet keeps the node NotReady
 * (with `node.kubernetes.io/not-ready`) and creates sandboxes only for host-network pods. The
 * stand-in is one host-network pod in kube-system, bound to that node, like a CNI DaemonSet's pod
 * (aws-node, Calico, Cilium): it pulls its own image (a few MiB, through whatever registry profile
 * is on), waits an optional delay (a slower CNI), then writes the node's CNI config through a
 * hostPath to that node's folder only. containerd's config watcher loads it; the kubelet sees the
 * network ready at its next runtime check (every 5 s) and reports Ready at its next status update.
 *
 * `failSeconds` models a CNI that fails to start: the container exits 1 until that many seconds
 * after the node was added, so the kubelet restarts it with its back-off (10 s, 20 s, 40 s, ...),
 * and the node turns Ready a little after that.
 */
import { TEST_IMAGES } from './images.js';

export interface CniStandInOptions {
  /** Seconds the stand-in waits after its start before it writes the config. @default 0 */
  delaySeconds?: number;
  /** Seconds, from the node's start, during which the stand-in exits 1 at once. @default 0 */
  failSeconds?: number;
}

/** What a node's spec keeps of its stand-in: the options, with the failure fixed in time. */
export interface CniStandInSpec {
  delaySeconds: number;
  /** Epoch seconds until which the stand-in fails; 0 when it never does. */
  failUntil: number;
}

export const CNI_STAND_IN_NAMESPACE = 'kube-system';
/** The label of every stand-in pod (their name is {@link cniStandInPodName}). */
export const CNI_STAND_IN_LABEL = { 'harness.prewarm.dev/cni-stand-in': 'true' } as const;
/** The name the stand-in gives the config: the one the harness writes on nodes without it. */
export const CNI_CONF_FILE = '10-prewarm.conflist';

export function cniStandInSpec(opts: CniStandInOptions, now = Date.now()): CniStandInSpec {
  const delaySeconds = opts.delaySeconds ?? 0;
  const failSeconds = opts.failSeconds ?? 0;
  for (const [k, v] of Object.entries({ delaySeconds, failSeconds })) {
    if (!Number.isFinite(v) || v < 0 || v > 3600) throw new Error(`CNI stand-in ${k} must be 0..3600 seconds, not ${v}`);
  }
  return { delaySeconds, failUntil: failSeconds > 0 ? Math.ceil(now / 1000 + failSeconds) : 0 };
}

export function cniStandInPodName(node: string): string {
  return `cni-stand-in-${node}`;
}

/** kubectl arguments that delete the stand-in pod of `node` at once (its node is going, or gone). */
export function deleteCniStandInArgs(node: string): string[] {
  return [
    'delete',
    'pod',
    '-n',
    CNI_STAND_IN_NAMESPACE,
    cniStandInPodName(node),
    '--ignore-not-found',
    '--grace-period=0',
    '--force',
    '--wait=false',
  ];
}

/** The stand-in's script: fail while told to, wait, write the config atomically, then stay up like a CNI agent. */
const SCRIPT = [
  'set -eu',
  'if [ "$(date +%s)" -lt "$FAIL_UNTIL" ]; then echo "CNI stand-in: failing until $FAIL_UNTIL" >&2; exit 1; fi',
  'sleep "$DELAY"',
  `printf '%s' "$CONF" > "/host/net.d/.${CNI_CONF_FILE}.tmp"`,
  `mv "/host/net.d/.${CNI_CONF_FILE}.tmp" "/host/net.d/${CNI_CONF_FILE}"`,
  'echo "CNI stand-in: wrote /host/net.d/' + CNI_CONF_FILE + '"',
  'exec sleep 2147483647',
].join('\n');

/** The stand-in pod of `node`: host network, every taint tolerated, its config folder as a hostPath. */
export function cniStandInPod(node: string, confDir: string, conflist: string, spec: CniStandInSpec): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: cniStandInPodName(node), namespace: CNI_STAND_IN_NAMESPACE, labels: { ...CNI_STAND_IN_LABEL } },
    spec: {
      nodeName: node,
      hostNetwork: true,
      priorityClassName: 'system-node-critical',
      tolerations: [{ operator: 'Exists' }],
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: 'cni',
          image: TEST_IMAGES.cniStandIn,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/sh', '-c', SCRIPT],
          env: [
            { name: 'CONF', value: conflist },
            { name: 'DELAY', value: String(spec.delaySeconds) },
            { name: 'FAIL_UNTIL', value: String(spec.failUntil) },
          ],
          volumeMounts: [{ name: 'net-d', mountPath: '/host/net.d' }],
          resources: { requests: { cpu: '5m', memory: '8Mi' }, limits: { memory: '32Mi' } },
        },
      ],
      volumes: [{ name: 'net-d', hostPath: { path: confDir, type: 'Directory' } }],
    },
  };
}
