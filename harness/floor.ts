/**
 * The pod floor: how long the harness takes from a node's Ready until a one-container DaemonSet
 * pod whose image is already there is seen Running. Its container runs the pause image, which the
 * pod's own sandbox has just put on the node, so nothing is pulled for the container: what is left
 * is scheduling, the sandbox, one container start and the status the kubelet publishes. It bounds
 * any pod-based puller from below (prewarm's, che's, kube-fledged's Jobs).
 */
import { IMAGES } from './cluster/config.js';
import type { Kube, KubeObject } from './kube.js';
import { applyAll } from './manifests.js';
import { pollUntil } from './time.js';

/** The floor DaemonSet in `namespace`, on the nodes labelled `selector`. */
export function floorObjects(namespace: string, selector: Record<string, string>): KubeObject[] {
  const labels = { app: 'bench-floor' };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'floor', namespace },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            nodeSelector: selector,
            terminationGracePeriodSeconds: 0,
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            containers: [{ name: 'floor', image: IMAGES.pause, imagePullPolicy: 'IfNotPresent' }],
          },
        },
      },
    },
  ];
}

export async function applyFloor(kube: Kube, namespace: string, selector: Record<string, string>): Promise<void> {
  await applyAll(kube, floorObjects(namespace, selector));
}

/** When the floor pod on `node` was first seen Running (polled every 100 ms), or undefined at `deadline`. */
export async function floorRunningAt(kube: Kube, namespace: string, node: string, deadline: number): Promise<number | undefined> {
  return pollUntil(
    async () => {
      const pods = await kube.list(`/api/v1/namespaces/${namespace}/pods`, { fieldSelector: `spec.nodeName=${node}` });
      return pods.items.some((p) => (p.status as { phase?: string } | undefined)?.phase === 'Running') ? Date.now() : undefined;
    },
    deadline,
    100,
  );
}
