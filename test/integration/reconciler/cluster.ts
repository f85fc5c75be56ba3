/**
 * Helpers of the reconciler's integration tests against the harness's real kube-apiserver
 * (test/integration/setup.ts provides the admin kubeconfig): an admin client, applying synthesized
 * objects, fake Node objects (no kubelet: the tests play the kubelet by writing pod status), and
 * pod-bound ServiceAccount tokens that carry the node-name claim.
 */
import fs from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { Testing } from 'cdk8s';
import { inject } from 'vitest';
import type { Endpoint, KubeHttp } from '../../../src/http/client.js';
import { ApiError } from '../../../src/http/api-error.js';
import { collectionPath, objectPath } from '../../../harness/kube.js';
import { waitFor } from '../../../harness/time.js';
import type { KNode, KPod } from '../../../src/reconciler/kube-types.js';
import { ReconcilerAccess, type ReconcilerAccessProps } from '../../../src/synth/access.js';

/**
 * Every namespace any reconciler integration test uses: the access objects are cluster-scoped and
 * shared, so every file applies them with this same list (files run in parallel).
 */
export const INT_NAMESPACES = ['prewarm-int-access', 'prewarm-int-sidecar', 'prewarm-int-failsafe', 'prewarm-int-refresh'];

/**
 * The access every file applies (the policy and its bindings are cluster-scoped, so all files must
 * apply the same props): the sidecars' in every namespace, refresh in one, the fail-safe's as
 * synthesis renders it.
 */
export const INT_ACCESS: ReconcilerAccessProps = {
  namespaces: INT_NAMESPACES,
  refreshNamespaces: ['prewarm-int-refresh'],
  failsafeNamespace: 'prewarm-int-failsafe',
};

const read = (file?: string, data?: string): Buffer | undefined =>
  data ? Buffer.from(data, 'base64') : file ? fs.readFileSync(file) : undefined;

/** The admin endpoint of the harness apiserver. */
export function adminEndpoint(): Endpoint {
  return endpointOf(inject('kubeconfig'));
}

/** The endpoint of a kubeconfig file's current context. */
export function endpointOf(kubeconfig: string): Endpoint {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user) throw new Error('kubeconfig has no current cluster/user');
  const ca = read(cluster.caFile, cluster.caData);
  const cert = read(user.certFile, user.certData);
  const key = read(user.keyFile, user.keyData);
  return {
    server: cluster.server,
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(user.token ? { token: () => user.token } : {}),
  };
}

/** An endpoint authenticating with a bearer token (no client cert). */
export function tokenEndpoint(token: string): Endpoint {
  const a = adminEndpoint();
  return { server: a.server, ...(a.ca ? { ca: a.ca } : {}), token: () => token };
}

/** Creates an object, or replaces it if it exists (idempotent across reruns on a kept cluster). */
export async function apply(
  http: KubeHttp,
  o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } },
): Promise<void> {
  try {
    await http.json('POST', collectionPath(o), o);
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== 409) throw e;
    const cur = await http.json<{ metadata: { resourceVersion: string } }>('GET', objectPath(o));
    await http.json('PUT', objectPath(o), { ...o, metadata: { ...o.metadata, resourceVersion: cur.metadata.resourceVersion } });
  }
}

/** Synthesizes {@link ReconcilerAccess} and applies every object. */
export async function applyAccess(http: KubeHttp, props: ReconcilerAccessProps): Promise<void> {
  for (const name of props.namespaces) await apply(http, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const chart = Testing.chart();
  new ReconcilerAccess(chart, 'access', props);
  for (const o of Testing.synth(chart) as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }[])
    await apply(http, o);
}

/** Creates (or resets) a Node object with the given taints, Ready since `readyAt`. */
export async function makeNode(
  http: KubeHttp,
  name: string,
  taints: { key: string; effect: string; value?: string }[],
  readyAt = new Date(),
): Promise<KNode> {
  await deleteUntilGone(http, `/api/v1/nodes/${name}`, '', `node ${name}`, 5_000, 100);
  await http.json('POST', '/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: { taints },
  });
  const t = readyAt.toISOString();
  await http.json<KNode>(
    'PATCH',
    `/api/v1/nodes/${name}/status`,
    {
      status: {
        conditions: [
          { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test', lastHeartbeatTime: t, lastTransitionTime: t },
        ],
      },
    },
    'application/strategic-merge-patch+json',
  );
  // The NodeTaint admission plugin taints every new node node.kubernetes.io/not-ready:NoSchedule,
  // and the node lifecycle controller (not run here) lifts it once the node is Ready. Daemon pods
  // do not tolerate it, so a Ready node that kept it would select no pool.
  return http.json<KNode>('PATCH', `/api/v1/nodes/${name}`, { spec: { taints } }, 'application/merge-patch+json');
}

/** What {@link makeSchedulableNode} sets on a Node besides its name. */
export interface SchedulableNode {
  /** Labels besides `kubernetes.io/hostname`. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Exactly the node's taints. */
  readonly taints?: readonly { key: string; effect: string; value?: string }[];
  readonly unschedulable?: boolean;
}

/**
 * Creates a Node object the scheduler can place pods on: Ready, with capacity, labelled and
 * tainted as `o` says. No kubelet runs behind it.
 */
export async function makeSchedulableNode(http: KubeHttp, name: string, o: SchedulableNode = {}): Promise<void> {
  await http.json('POST', '/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...o.labels } },
    spec: o.unschedulable === true ? { unschedulable: true } : {},
  });
  // The NodeTaint admission plugin taints every new Node not-ready:NoSchedule, which the node
  // lifecycle controller (not run here) lifts once the node is Ready. Set the taints exactly,
  // after creation: a merge patch replaces the whole list.
  const taints = o.taints ?? [];
  await http.json(
    'PATCH',
    `/api/v1/nodes/${name}`,
    { spec: { taints: taints.length === 0 ? null : taints } },
    'application/merge-patch+json',
  );
  const now = new Date().toISOString();
  const ready = { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test', lastHeartbeatTime: now, lastTransitionTime: now };
  const capacity = { cpu: '8', memory: '32Gi', pods: '110' };
  await http.json(
    'PATCH',
    `/api/v1/nodes/${name}/status`,
    { status: { capacity, allocatable: capacity, conditions: [ready] } },
    'application/strategic-merge-patch+json',
  );
}

/** Creates a pod bound to `node` (no scheduler involved: spec.nodeName is set at creation). */
export async function makePod(http: KubeHttp, ns: string, name: string, node: string, sa: string, images: string[]): Promise<KPod> {
  return http.json<KPod>('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      nodeName: node,
      serviceAccountName: sa,
      automountServiceAccountToken: false,
      containers: [
        ...images.map((image, i) => ({ name: `c${i}`, image, imagePullPolicy: 'Always' })),
        { name: 'prewarm-reconciler', image: 'reg.local/prewarm:test' },
      ],
    },
  });
}

/** Plays the kubelet: sets the pod's container statuses. */
export async function setContainerStatuses(http: KubeHttp, pod: KPod, statuses: object[]): Promise<KPod> {
  return http.json<KPod>(
    'PATCH',
    `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`,
    { status: { phase: 'Running', containerStatuses: statuses } },
    'application/merge-patch+json',
  );
}

/** A TokenRequest bound to `pod`: the apiserver embeds the pod's node name in its claims. */
export async function podToken(http: KubeHttp, ns: string, sa: string, pod: KPod): Promise<string> {
  const r = await http.json<{ status: { token: string } }>('POST', `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid } },
  });
  return r.status.token;
}

/** The HTTP status a request ends with: 200, or the apiserver's refusal; a transport error throws. */
export async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (e) {
    if (e instanceof ApiError && e.code !== 0) return e.code;
    throw e;
  }
}

/** The apiserver's refusal of a request; throws when it was allowed or never answered. */
export async function denial(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiError && e.code !== 0) return e;
    throw e;
  }
  throw new Error('request was allowed');
}

/** Deletes a pod at once, if there is one, and waits until the apiserver no longer has it. */
export async function deletePod(http: KubeHttp, ns: string, name: string): Promise<void> {
  await deleteUntilGone(http, `/api/v1/namespaces/${ns}/pods/${name}`, '?gracePeriodSeconds=0', `pod ${name}`, 20_000, 200);
}

/** DELETE `path` (a 404 is fine), then poll GET until the apiserver answers 404. */
async function deleteUntilGone(
  http: KubeHttp,
  path: string,
  query: string,
  what: string,
  timeoutMs: number,
  everyMs: number,
): Promise<void> {
  try {
    await http.json('DELETE', `${path}${query}`);
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== 404) throw e;
  }
  await waitFor(
    `${what} gone`,
    async () => {
      try {
        await http.json('GET', path);
        return false;
      } catch (e) {
        if (e instanceof ApiError && e.code === 404) return true;
        throw e;
      }
    },
    timeoutMs,
    everyMs,
  );
}
