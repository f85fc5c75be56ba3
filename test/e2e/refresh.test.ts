/**
 * E2E: the sidecar's moved-tag refresh on a real kubelet and containerd.
 *
 * One pool with `spec.refresh.interval` of a few seconds caches two tagged images from the harness's
 * TLS registry (basic auth, credentials from the pool's pull secret; the registry's private CA
 * given to the sidecar through NODE_EXTRA_CA_CERTS, as a user with a private CA does):
 *  - `static` never changes: over several intervals the registry sees only manifest HEADs for it,
 *    no blob or manifest GET, and its container is never restarted;
 *  - `moving` gets new content pushed under the same tag: its container restarts once, the node's
 *    containerd holds the new digest under the tag, the node stays warm and the sidecar's node
 *    annotation records the new digest; then the tag is stable again and nothing restarts.
 * The registry's own access log is the witness for which requests each check cost.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { REGISTRY } from '../../harness/cluster/config.js';
import { ensureStandIn, localTarget, normalize, registryDigest } from '../../harness/cluster/images.js';
import { nodeImageDigests } from '../../harness/cluster/node.js';
import { CA_CRT } from '../../harness/cluster/pki.js';
import { registryLogOffset, registryRequests, type RegistryRequest } from '../../harness/cluster/registry.js';
import { secs, sleep, waitFor } from '../../harness/time.js';
import type { KubeObject } from '../../harness/kube.js';
import { type PoolImages, poolsOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { applyServerSide, imageCache, poolPodOnNode, registryPullSecret, specDir, waitPoolPodRunning, type PodInfo } from './helpers.js';
import { isHolder } from '../../src/contract/roles.js';

const NODE = 'refresh-node';
const NS = 'e2e-refresh';
const SEL = 'e2e.prewarm.dev/refresh';
/** Seconds between digest checks; the sidecar adds up to 20 % jitter. */
const INTERVAL = 8;
const MAX_DELAY_MS = INTERVAL * 1200;
const STATIC = `${REGISTRY.tls}/prewarm/refresh-static:v1`;
const MOVING = `${REGISTRY.tls}/prewarm/refresh-moving:v1`;
const SIDECAR = 'prewarm-reconciler';
const CA_MOUNT = '/etc/prewarm-registry-ca';

interface ContainerJson {
  name: string;
  image?: string;
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpecJson {
  /** The sidecar is a native sidecar: the first init container. */
  initContainers?: ContainerJson[];
  containers: ContainerJson[];
  volumes?: Record<string, unknown>[];
}

function templateOf(ds: KubeObject): PodSpecJson {
  const spec = (ds.spec as { template?: { spec?: PodSpecJson } } | undefined)?.template?.spec;
  if (!spec) throw new Error(`DaemonSet ${ds.metadata.name} has no pod template`);
  return spec;
}

/** The pod template's sidecar. */
function sidecarOf(spec: PodSpecJson): ContainerJson | undefined {
  return (spec.initContainers ?? []).find((c) => c.name === SIDECAR);
}

/**
 * The registry's CA for the sidecar: a ConfigMap mounted into it and named by NODE_EXTRA_CA_CERTS
 * (src/reconciler/README.md, "Moved tags"). This is the overlay a user with a private registry CA
 * applies; synthesis does not know the CA.
 */
function trustRegistryCa(objects: KubeObject[]): KubeObject[] {
  const cm: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'registry-ca', namespace: NS },
    data: { 'ca.crt': readFileSync(CA_CRT, 'utf8') },
  };
  // The holders run the sidecar; burst pullers have none.
  for (const o of objects.filter((x) => x.kind === 'DaemonSet' && x.metadata.namespace === NS && isHolder(x.metadata.labels))) {
    const spec = templateOf(o);
    spec.volumes = [...(spec.volumes ?? []), { name: 'registry-ca', configMap: { name: 'registry-ca' } }];
    const sidecar = sidecarOf(spec);
    if (!sidecar) throw new Error(`DaemonSet ${o.metadata.name} has no ${SIDECAR}`);
    sidecar.env = [...(sidecar.env ?? []), { name: 'NODE_EXTRA_CA_CERTS', value: `${CA_MOUNT}/ca.crt` }];
    sidecar.volumeMounts = [...(sidecar.volumeMounts ?? []), { name: 'registry-ca', mountPath: CA_MOUNT, readOnly: true }];
  }
  return [cm, ...objects];
}

function sidecarEnv(ds: KubeObject, name: string): string {
  const v = sidecarOf(templateOf(ds))?.env?.find((e) => e.name === name)?.value;
  if (!v) throw new Error(`sidecar of ${ds.metadata.name} has no ${name}`);
  return v;
}

function nodeMeta(): { labels: Record<string, string>; annotations: Record<string, string> } {
  const n = JSON.parse(kubectl(['get', 'node', NODE, '-o', 'json'])) as {
    metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  };
  return { labels: n.metadata.labels ?? {}, annotations: n.metadata.annotations ?? {} };
}

/** Repository path of a reference in the TLS registry, as it appears in request paths. */
function repoOf(ref: string): string {
  return localTarget(ref).repo;
}

/** Requests for one repository, split into the sidecar's successful digest checks and the rest. */
function requestsFor(ref: string, offset: number): { checks: RegistryRequest[]; all: RegistryRequest[] } {
  const prefix = `/v2/${repoOf(ref)}/`;
  const all = registryRequests(true, offset).filter((r) => r.path.startsWith(prefix));
  const checks = all.filter(
    (r) => r.method === 'HEAD' && r.status === 200 && r.userAgent === SIDECAR && r.path === `${prefix}manifests/v1`,
  );
  return { checks, all };
}

/** The sidecar's log and the pod's container images: why a refresh did not happen. */
function sidecarDiagnostics(podName: string): string {
  const logs = kubectl(['-n', NS, 'logs', podName, '-c', SIDECAR, '--tail', '60'], { allowFail: true });
  const images = kubectl(['-n', NS, 'get', 'pod', podName, '-o', 'jsonpath={.spec.containers[*].image}'], { allowFail: true });
  return `pod images: ${images}\nsidecar log:\n${logs}`;
}

function describeRequests(rs: readonly RegistryRequest[]): string {
  return rs.map((r) => `${r.method} ${r.path} ${r.status} ${r.userAgent}`).join('\n');
}

describe('moved-tag refresh on a real node', () => {
  let pool: PoolImages;
  let ds: KubeObject;
  let labelKey = '';
  let annotationKey = '';
  const before = new Map<string, string>();

  const pod = (): PodInfo => {
    const p = poolPodOnNode(pool, NODE);
    if (!p) throw new Error(`no pod of pool ${pool.pool} on ${NODE}`);
    return p;
  };
  /** The container that caches `ref`, as the pod template renders it. */
  const templateContainer = (ref: string): { name: string; image: string } => {
    const c = templateOf(ds).containers.find((x) => x.image !== undefined && normalize(x.image) === normalize(ref));
    if (!c?.image) throw new Error(`no container of ${ref} in ${ds.metadata.name}`);
    return { name: c.name, image: c.image };
  };
  const containerOf = (ref: string): string => templateContainer(ref).name;
  const status = (ref: string): PodInfo['containerStatuses'][number] => {
    // By container name: once refresh pins the tag to a digest, containerd keeps the image under
    // the digest alone and the kubelet reports the status's `image` as its id (`sha256:…`).
    const name = containerOf(ref);
    const s = pod().containerStatuses.find((c) => c.name === name);
    if (!s) throw new Error(`no container status for ${ref} (${name}): ${JSON.stringify(pod().containerStatuses)}`);
    return s;
  };
  /** The image the pod's spec now gives the container of `ref`. */
  const specImage = (ref: string): string =>
    kubectl(['-n', NS, 'get', 'pod', pod().name, '-o', `jsonpath={.spec.containers[?(@.name=="${containerOf(ref)}")].image}`]);
  const annotationDigests = (): Record<string, string> => {
    const text = nodeMeta().annotations[annotationKey];
    const digests = text ? ((JSON.parse(text) as { digests?: Record<string, string> }).digests ?? {}) : {};
    // Once refresh pins a tag to the digest it moved to, the pod (and so the annotation) names
    // `ref@sha256:…`: read it back under `ref`.
    return Object.fromEntries(Object.entries(digests).map(([image, d]) => [image.split('@')[0] ?? image, d]));
  };

  beforeAll(async () => {
    const dir = specDir('refresh', [
      imageCache(NS, 'refresh', [{ pool: 'refresh', nodeSelector: { [SEL]: 'yes' }, images: [STATIC, MOVING] }], {
        imagePullSecrets: [{ name: 'regcred' }],
        refresh: { interval: `${INTERVAL}s` },
      }),
    ]);
    const objects = yamlObjects(synth([dir], ['--min-refresh-interval', `${INTERVAL}s`]).yaml);
    const found = poolsOf(objects).find((p) => p.namespace === NS);
    const dsObj = objects.find((o) => o.kind === 'DaemonSet' && o.metadata.namespace === NS);
    if (!found || !dsObj) throw new Error(`synth output has no pool in ${NS}`);
    pool = found;
    ds = dsObj;
    labelKey = sidecarEnv(ds, 'PREWARM_NODE_LABEL_KEY');
    annotationKey = sidecarEnv(ds, 'PREWARM_NODE_ANNOTATION_KEY');
    expect(sidecarEnv(ds, 'PREWARM_REFRESH_SECONDS')).toBe(String(INTERVAL));
    // Fresh content under both tags on every run, so digests from an earlier run cannot match.
    for (const ref of [STATIC, MOVING]) ensureStandIn(ref, { force: true });
    prepareImages(objects);
    await addNode(NODE, { labels: { [SEL]: 'yes' } });
    const namespaces = objects.filter((o) => o.kind === 'Namespace');
    expect(applyServerSide(namespaces.map((o) => JSON.stringify(o)).join('\n---\n')).warnings).toEqual([]);
    expect(applyServerSide(JSON.stringify(registryPullSecret(NS, 'regcred'))).warnings).toEqual([]);
    const applied = applyServerSide(
      trustRegistryCa(objects)
        .map((o) => JSON.stringify(o))
        .join('\n---\n'),
    );
    expect(applied.warnings, applied.stderr).toEqual([]);
  });

  afterAll(async () => {
    await removeNode(NODE).catch(() => undefined);
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false'], { allowFail: true });
  });

  it('synthesizes what refresh needs: Always for tags, the pull secret mounted, no shared PID namespace', () => {
    const spec = (
      ds.spec as { template: { spec: { shareProcessNamespace?: boolean; containers: { name: string; imagePullPolicy?: string }[] } } }
    ).template.spec;
    expect(spec.shareProcessNamespace).toBeUndefined();
    for (const c of spec.containers.filter((x) => x.name !== SIDECAR)) expect(c.imagePullPolicy, c.name).toBe('Always');
    const mounts = sidecarOf(templateOf(ds))?.volumeMounts ?? [];
    expect(mounts.map((m) => m.mountPath)).toContain('/etc/prewarm-pull-secrets/regcred');
  });

  it('warms the node; containerd, the node annotation and the registry agree on each digest', async () => {
    await waitPoolPodRunning(pool, NODE, 180_000);
    await waitFor(`${labelKey}=warm on ${NODE}`, () => nodeMeta().labels[labelKey] === 'warm', 120_000, 500);
    const onNode = nodeImageDigests(NODE);
    const ann = await waitFor(
      'annotation digests',
      () => {
        const d = annotationDigests();
        return d[STATIC] && d[MOVING] ? d : undefined;
      },
      30_000,
      500,
    );
    for (const ref of [STATIC, MOVING]) {
      const reg = registryDigest(ref);
      expect(reg, `registry has ${ref}`).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(onNode.get(normalize(ref)), `containerd digest of ${ref}`).toBe(reg);
      expect(ann[ref], `annotation digest of ${ref}`).toBe(reg);
      before.set(ref, reg as string);
      expect(status(ref).restartCount).toBe(0);
    }
  });

  it('unchanged tag: over two intervals only manifest HEADs reach the registry, nothing restarts', async () => {
    const offset = registryLogOffset(true);
    const t0 = Date.now();
    await waitFor(
      'two digest checks per image over at least two intervals',
      () => {
        if (Date.now() - t0 < 2 * MAX_DELAY_MS) return false;
        return [STATIC, MOVING].every((ref) => requestsFor(ref, offset).checks.length >= 2);
      },
      4 * MAX_DELAY_MS + 10_000,
      500,
    );
    const elapsed = Date.now() - t0;
    for (const ref of [STATIC, MOVING]) {
      const { checks, all } = requestsFor(ref, offset);
      // Each check may be answered 401 first (basic auth challenge): still a HEAD of the manifest.
      const other = all.filter((r) => !(r.method === 'HEAD' && r.path === `/v2/${repoOf(ref)}/manifests/v1`));
      expect(other, `requests for ${ref} other than manifest HEADs:\n${describeRequests(other)}`).toEqual([]);
      // After the first basic challenge the sidecar sends the credentials up front: one HEAD per check.
      expect(all.filter((r) => r.status === 401).length, describeRequests(all)).toBeLessThanOrEqual(1);
      console.log(`unchanged ${ref}: ${checks.length} checks (${all.length} HEADs incl. auth challenges) in ${secs(elapsed)}s, 0 GETs`);
      expect(status(ref).restartCount).toBe(0);
      expect(nodeImageDigests(NODE).get(normalize(ref))).toBe(before.get(ref));
    }
    expect(nodeMeta().labels[labelKey]).toBe('warm');
  });

  it('moved tag: the container restarts once, containerd and the annotation get the new digest, the node stays warm', async () => {
    const offset = registryLogOffset(true);
    ensureStandIn(MOVING, { force: true });
    const pushedAt = Date.now();
    const moved = registryDigest(MOVING) as string;
    expect(moved).not.toBe(before.get(MOVING));

    await waitFor(
      `${MOVING} re-pulled on ${NODE}`,
      () => status(MOVING).imageID?.endsWith(moved) === true && status(MOVING).restartCount >= 1,
      MAX_DELAY_MS + 60_000,
      250,
    ).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}\n${sidecarDiagnostics(pod().name)}`);
    });
    const repulledMs = Date.now() - pushedAt;
    console.log(`refresh re-pulled after ${secs(repulledMs)}s (interval ${INTERVAL}s)`);
    expect(repulledMs).toBeLessThan(MAX_DELAY_MS + 60_000);

    // The running container reports the new digest, and the sidecar writes it into the annotation.
    await waitFor('container imageID has the new digest', () => status(MOVING).imageID?.endsWith(moved), 30_000, 250);
    await waitFor('annotation has the new digest', () => annotationDigests()[MOVING] === moved, 30_000, 250).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}; annotation: ${nodeMeta().annotations[annotationKey] ?? '(none)'}`);
    });
    expect(annotationDigests()[STATIC]).toBe(before.get(STATIC));
    expect(nodeMeta().labels[labelKey]).toBe('warm');

    // containerd re-pulled the new manifest of `moving` (the push itself is skopeo's), nothing of `static`.
    const movingReqs = requestsFor(MOVING, offset).all;
    expect(
      movingReqs.some((r) => r.method === 'GET' && r.path.includes('/manifests/') && r.userAgent.startsWith('containerd')),
      describeRequests(movingReqs),
    ).toBe(true);
    const staticOther = requestsFor(STATIC, offset).all.filter((r) => r.method !== 'HEAD');
    expect(staticOther, describeRequests(staticOther)).toEqual([]);
    const events = kubectl([
      '-n',
      'default',
      'get',
      'events',
      '--field-selector',
      `reason=TagMoved,involvedObject.name=${NODE}`,
      '-o',
      'jsonpath={.items[*].message}',
    ]);
    expect(events).toContain(moved);
    const refusals = kubectl([
      '-n',
      'default',
      'get',
      'events',
      '--field-selector',
      `reason=TagRefreshFailed,involvedObject.name=${NODE}`,
      '-o',
      'name',
    ]);
    expect(refusals.trim()).toBe('');
    // The sidecar set the container's image to the tag at its new digest; the kubelet pulled that.
    expect(specImage(MOVING)).toBe(`${templateContainer(MOVING).image}@${moved}`);
    expect(specImage(STATIC)).toBe(templateContainer(STATIC).image);

    // The tag is stable again: one more check finds it unchanged and nothing restarts again.
    const after = registryLogOffset(true);
    await waitFor('a check after the re-pull', () => requestsFor(MOVING, after).checks.length >= 1, MAX_DELAY_MS + 10_000, 500);
    await sleep(1_000);
    expect(status(MOVING).restartCount).toBe(1);
    expect(status(STATIC).restartCount).toBe(0);
    expect(requestsFor(MOVING, after).all.filter((r) => r.method === 'GET')).toEqual([]);
    expect(nodeMeta().labels[labelKey]).toBe('warm');
  });
});
