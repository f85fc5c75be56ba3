/** Helpers of the e2e tests: apply, pods of a pool, waits on nodes and pods, node images and labels. */
import { BIN, REGISTRY } from '../../harness/cluster/config.js';
import { kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { stopBareRuntime } from '../../harness/cluster/bare.js';
import { normalize } from '../../harness/cluster/images.js';
import { crictl } from '../../harness/cluster/node.js';
import { run } from '../../harness/cluster/sh.js';
import { waitFor } from '../../harness/time.js';
import { Kube, type KubeObject } from '../../harness/kube.js';
import type { PoolImages } from '../../harness/manifests.js';
import { missingImages, NodeWatch, waitImages } from '../../harness/nodes.js';

export interface ApplyResult {
  stdout: string;
  stderr: string;
  warnings: string[];
}

/**
 * The one warning applying early pullers gives: their owned namespace keeps Pod Security `warn` at
 * restricted, so their host network is reported (docs/architecture.md, early pullers); kubectl prints it once.
 */
export const HOST_NETWORK_WARNING = 'Warning: would violate PodSecurity "restricted:latest": host namespaces (hostNetwork=true)';

/** Server-side apply; returns apiserver warnings (kubectl prints them as "Warning: ..."). */
export function applyServerSide(yaml: string, fieldManager = 'prewarm-e2e'): ApplyResult {
  const r = runKubectl(['apply', '--server-side', '--force-conflicts', `--field-manager=${fieldManager}`, '-f', '-'], yaml);
  const warnings = r.stderr.split('\n').filter((l) => /^Warning:/i.test(l.trim()));
  return { ...r, warnings };
}

export function runKubectl(args: string[], input?: string): { stdout: string; stderr: string } {
  const r = run([BIN.kubectl, `--kubeconfig=${kubeconfigPath()}`, ...args], {
    ...(input !== undefined ? { input } : {}),
    timeoutMs: 300_000,
  });
  return { stdout: r.stdout, stderr: r.stderr };
}

export function kubeconfigPath(): string {
  const k = process.env['PREWARM_KUBECONFIG'];
  if (!k) throw new Error('PREWARM_KUBECONFIG not set: run through the e2e project (globalSetup harness/cluster/global-setup.ts)');
  return k;
}

export interface PodInfo {
  name: string;
  namespace: string;
  node: string;
  phase: string;
  ready: boolean;
  labels: Record<string, string>;
  containerStatuses: {
    name: string;
    image: string;
    /** `repo@sha256:…` of what runs, once the runtime reported it. */
    imageID?: string;
    ready: boolean;
    restartCount: number;
    state: Record<string, { reason?: string; message?: string }>;
  }[];
  initContainerStatuses: PodInfo['containerStatuses'];
}

interface RawPod {
  metadata: { name: string; namespace: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: {
    phase?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: PodInfo['containerStatuses'];
    initContainerStatuses?: PodInfo['containerStatuses'];
  };
}

export function pods(selector: string, namespace?: string): PodInfo[] {
  const ns = namespace ? ['-n', namespace] : ['-A'];
  const out = kubectl(['get', 'pods', ...ns, '-l', selector, '-o', 'json']);
  const items = (JSON.parse(out) as { items: RawPod[] }).items;
  return items
    .filter((p) => !p.metadata.deletionTimestamp)
    .map((p) => ({
      name: p.metadata.name,
      namespace: p.metadata.namespace,
      node: p.spec.nodeName ?? '',
      phase: p.status.phase ?? '',
      ready: (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
      labels: p.metadata.labels ?? {},
      containerStatuses: p.status.containerStatuses ?? [],
      initContainerStatuses: p.status.initContainerStatuses ?? [],
    }));
}

export function poolPodOnNode(pool: PoolImages, node: string): PodInfo | undefined {
  return pods(`prewarm.dev/pool=${pool.pool}`, pool.namespace).find((p) => p.node === node);
}

export async function waitPoolPodRunning(pool: PoolImages, node: string, timeoutMs = 180_000): Promise<PodInfo> {
  return waitFor(
    `pod of pool ${pool.pool} Running on ${node}`,
    () => {
      const p = poolPodOnNode(pool, node);
      return p && p.phase === 'Running' ? p : undefined;
    },
    timeoutMs,
    500,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}\n${describePool(pool)}`);
  });
}

export function describePool(pool: PoolImages): string {
  return (
    kubectl(['-n', pool.namespace, 'get', 'pods', '-l', `prewarm.dev/pool=${pool.pool}`, '-o', 'wide'], { allowFail: true }) +
    kubectl(['-n', pool.namespace, 'get', 'events', '--sort-by=.lastTimestamp'], { allowFail: true }).split('\n').slice(-25).join('\n')
  );
}

/** {@link waitImages} that throws, naming the images still missing, when they are not there in time. */
export async function waitImagesOnNode(node: string, refs: readonly string[], timeoutMs = 300_000, intervalMs = 100): Promise<number> {
  const at = await waitImages(node, refs, Date.now() + timeoutMs, intervalMs);
  if (at !== undefined) return at;
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for images on ${node}: ${refs.map(normalize).join(', ')}\nstill missing: ${(await missingImages(node, refs)).join(', ')}`,
  );
}

/**
 * Waits until the node's status lists every one of `refs` (by tag). The kubelet lists images from
 * a cache it refreshes every 30 s, so a node warm a moment ago may not list them yet; doctor would
 * then size them from the registry, which it cannot reach here (the harness registry's
 * certificate, the mirrored hosts). A settled node lists them all.
 */
export async function waitNodeListsImages(node: string, refs: readonly string[], timeoutMs = 120_000): Promise<void> {
  const wanted = [...new Set(refs)].map(normalize);
  await waitFor(
    `${node} lists ${wanted.join(', ')}`,
    () => {
      const n = JSON.parse(kubectl(['get', 'node', node, '-o', 'json'])) as { status?: { images?: { names?: string[] }[] } };
      const names = new Set((n.status?.images ?? []).flatMap((i) => (i.names ?? []).filter((x) => !x.includes('@')).map(normalize)));
      return wanted.every((w) => names.has(w));
    },
    timeoutMs,
    1000,
  );
}

export function labelNode(node: string, labels: Record<string, string | null>): void {
  const args = Object.entries(labels).map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`));
  kubectl(['label', 'node', node, '--overwrite', ...args]);
}

export { imageCache, specDir } from '../../harness/specs.js';

/** Containers running on a node (crictl ps), with the image each uses. */
export function runningContainers(node: string): { name: string; image: string; imageRef: string; state: string }[] {
  const out = JSON.parse(crictl(node, ['ps', '-o', 'json'])) as {
    containers: { metadata: { name: string }; image: { image: string }; imageRef: string; state: string }[];
  };
  return out.containers.map((c) => ({ name: c.metadata.name, image: c.image.image, imageRef: c.imageRef, state: c.state }));
}

/** Image ids (sha256:...) on a node by normalised tag, from the CRI image service. */
export function imageIdsOnNode(node: string): Map<string, string> {
  const out = JSON.parse(crictl(node, ['images', '-o', 'json'])) as { images: { id: string; repoTags?: string[] }[] };
  const m = new Map<string, string>();
  for (const i of out.images) for (const t of i.repoTags ?? []) m.set(t, i.id);
  return m;
}

/** Running containers on a node that use any of the given images. */
export function containersUsing(node: string, refs: readonly string[]): { name: string; image: string }[] {
  const ids = imageIdsOnNode(node);
  const wanted = new Set<string>();
  for (const r of refs) {
    wanted.add(normalize(r));
    const id = ids.get(normalize(r));
    if (id) wanted.add(id);
  }
  return runningContainers(node)
    .filter((c) => c.state === 'CONTAINER_RUNNING')
    .filter((c) => wanted.has(c.image) || wanted.has(c.imageRef))
    .map((c) => ({ name: c.name, image: c.image }));
}

/** A `kubernetes.io/dockerconfigjson` Secret with the harness TLS registry's credentials. */
export function registryPullSecret(namespace: string, name: string): KubeObject {
  const auth = Buffer.from(`${REGISTRY.user}:${REGISTRY.password}`).toString('base64');
  const dockerconfig = { auths: { [REGISTRY.tls]: { username: REGISTRY.user, password: REGISTRY.password, auth } } };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(JSON.stringify(dockerconfig)).toString('base64') },
  };
}

/** A file's client and a started watch of the nodes labelled `selector`; {@link cleanUp} ends both. */
export async function watchNodes(selector: string): Promise<{ kube: Kube; watch: NodeWatch }> {
  const kube = new Kube();
  const watch = new NodeWatch(kube, selector);
  await watch.start();
  return { kube, watch };
}

/**
 * A file's teardown: its node watch and client closed, its real nodes removed and its bare
 * runtimes stopped (each best effort), its namespaces deleted without waiting.
 */
export async function cleanUp(o: {
  readonly watch?: NodeWatch | undefined;
  readonly kube?: Kube | undefined;
  readonly nodes?: readonly string[];
  readonly bareRuntimes?: readonly string[];
  readonly namespaces: readonly string[];
}): Promise<void> {
  o.watch?.close();
  o.kube?.close();
  for (const n of o.nodes ?? []) await removeNode(n).catch(() => undefined);
  for (const n of o.bareRuntimes ?? []) await stopBareRuntime(n).catch(() => undefined);
  kubectl(['delete', 'namespace', ...o.namespaces, '--ignore-not-found', '--wait=false'], { allowFail: true });
}
