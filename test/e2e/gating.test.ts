/**
 * E2E: the sidecar reconciler on real kubelets. Two real nodes join with the gating
 * taint already on them, put there by the kubelet at registration (`registerWithTaints`, the
 * config-file form of `--register-with-taints`):
 *
 * 1. gate-node, selected by pool `gated` (default gate, 10 min deadline): the pull pod runs
 *    despite the taint, the node is labelled warm with a correct status annotation, the taint is
 *    removed, and a workload pod without a toleration is held Pending until then;
 * 2. gate-fail, selected by pool `failopen` (one image absent from the registry, 40 s deadline):
 *    the gate fails open at the deadline and not before, with label `partial`, a Warning Event
 *    `Partial` and the missing image in the annotation;
 * 3. the projected token of the real sidecar on gate-node, read from the kubelet's pod volume,
 *    is denied by the admission policy on gate-fail and for non-prewarm keys, and allowed for its
 *    own pool label;
 * 4. gate-node loses its pool label: the pull pod goes and the sidecar's SIGTERM cleanup removes
 *    its label and annotation.
 * The tests share the two nodes and run in this order.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kube, KubeObject } from '../../harness/kube.js';
import { type NodeWatch, until } from '../../harness/nodes.js';
import { KubeHttp } from '../../src/http/client.js';
import { ApiError } from '../../src/http/api-error.js';
import { NODE_NAME_EXTRA } from '../../src/synth/access.js';
import { ACCESS_NAMES } from '../../src/contract/access-names.js';
import { DEFAULT_GATE_TAINT_KEY, ENV, SIDECAR_CONTAINER } from '../../src/contract/names.js';
import { runningContainers } from '../../src/contract/pod-status.js';
import { HELPER_CONTAINER } from '../../src/synth/naming.js';
import { addNode, CA_CRT, kubectl } from '../../harness/cluster/cluster.js';
import { apiserverUrl, BIN, IMAGES, VERSIONS } from '../../harness/cluster/config.js';
import { imageInRegistry, normalize } from '../../harness/cluster/images.js';
import { nodeImageDigests, nodeImages, nodePaths, type Taint } from '../../harness/cluster/node.js';
import { runAsync } from '../../harness/cluster/sh.js';
import { secs, sleep, waitFor } from '../../harness/time.js';
import { podSpecOf, type PoolImages, poolsOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { applyServerSide, cleanUp, describePool, imageCache, kubeconfigPath, labelNode, specDir, watchNodes } from './helpers.js';

const NS = 'e2e-gating';
const WL_NS = 'e2e-gating-wl';
const WORKLOAD = 'plain-workload';
const SEL = 'e2e.prewarm.dev/gating';
const NODE_A = 'gate-node';
const NODE_B = 'gate-fail';
const GATE_TAINT: Taint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };
const GATED_IMAGES = ['docker.io/e2e/gate-app:1.0', 'quay.io/e2e/gate-tool:2.0'];
const PARTIAL_OK = 'docker.io/e2e/gate-partial-ok:1.0';
/** Never pushed: every pull of it fails with ErrImagePull / ImagePullBackOff. */
const ABSENT = 'docker.io/e2e/gate-absent:1.0';
/** The failopen pool's gate deadline; the spec accepts any whole positive duration. */
const DEADLINE_S = 40;
/**
 * The sidecar times the deadline on this host's clock from the apiserver's second-resolution
 * timestamps, which round down; first-seen removal can only be later. The tolerance covers
 * nothing but scheduling jitter of timers.
 */
const TOLERANCE_MS = 500;

interface PoolKeys {
  label: string;
  annotation: string;
}
interface StatusAnnotation {
  v: number;
  pod: string;
  state: string;
  images: number;
  present?: number;
  warmAt?: string;
  ttwSeconds?: number;
  digests?: Record<string, string>;
  failing?: { image: string; reason: string; message?: string }[];
}
interface CoreEvent {
  type: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

/** The node label and annotation keys synthesis hands the pool's sidecar. */
function poolKeys(objects: KubeObject[], pool: PoolImages): PoolKeys {
  const ds = objects.find((o) => o.kind === 'DaemonSet' && o.metadata.name === pool.daemonSet);
  const sidecar = runningContainers(podSpecOf(ds as KubeObject)).find((c) => c.name === SIDECAR_CONTAINER) as
    { env?: { name: string; value?: string }[] } | undefined;
  const env = (name: string): string => {
    const v = sidecar?.env?.find((e) => e.name === name)?.value;
    if (!v) throw new Error(`DaemonSet ${pool.daemonSet} sets no ${name} on the sidecar`);
    return v;
  };
  return { label: env(ENV.nodeLabelKey), annotation: env(ENV.nodeAnnotationKey) };
}

function readyCondition(node: KubeObject): { status: string; lastTransitionTime: string } | undefined {
  return (node.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready');
}

function statusAnnotation(node: KubeObject, key: string): StatusAnnotation {
  const text = node.metadata.annotations?.[key];
  expect(text, `annotation ${key} on ${node.metadata.name}`).toBeDefined();
  return JSON.parse(text as string) as StatusAnnotation;
}

/** The manifest digest `ref` resolves to in `node`'s containerd (what the kubelet puts into imageID). */
function nodeDigestOf(node: string, ref: string): string[] {
  const digest = nodeImageDigests(node).get(normalize(ref));
  return digest === undefined ? [] : [digest];
}

async function pullPodOn(kube: Kube, pool: PoolImages, node: string): Promise<KubeObject | undefined> {
  const l = await kube.list(`/api/v1/namespaces/${pool.namespace}/pods`, {
    labelSelector: `prewarm.dev/pool=${pool.pool}`,
    fieldSelector: `spec.nodeName=${node}`,
  });
  return l.items.find((p) => !p.metadata.deletionTimestamp);
}

/** Events about this incarnation of the node (its uid: a kept cluster may hold older ones). */
async function nodeEvents(kube: Kube, node: KubeObject, reason: string): Promise<CoreEvent[]> {
  const sel = `involvedObject.kind=Node,involvedObject.name=${node.metadata.name},involvedObject.uid=${node.metadata.uid ?? ''},reason=${reason}`;
  return waitFor(
    `${reason} Event about ${node.metadata.name}`,
    async () => {
      const l = await kube.list<CoreEvent>('/api/v1/namespaces/default/events', { fieldSelector: sel });
      return l.items.length ? l.items : undefined;
    },
    30_000,
    500,
  );
}

/** A pod with no toleration, restricted-compliant, that can only go to gate-node. */
function workloadPod(): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: WORKLOAD, namespace: WL_NS },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': NODE_A },
      terminationGracePeriodSeconds: 0,
      securityContext: { runAsNonRoot: true, runAsUser: 65535, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        { name: 'app', image: IMAGES.pause, securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } },
      ],
    },
  };
}

/**
 * One observation of the join. Reads happen in the order workload pod, pull pod, node, workload
 * pod again, so that (bindings and the taint's removal being one-way) a bound pod read *before* a
 * tainted node was bound while the taint was there, and an unbound pod read *after* a node was
 * still unbound at that moment.
 */
interface Sample {
  workloadBoundBefore: boolean;
  pullBound: boolean;
  tainted: boolean;
  /** Ready, and the gate is the node's only taint (not-ready is gone). */
  readyGateOnly: boolean;
  workloadBoundAfter: boolean;
}

async function sampleJoin(kube: Kube, pool: PoolImages, stopAt: number): Promise<Sample[]> {
  const out: Sample[] = [];
  const workloadBound = async (): Promise<boolean> =>
    Boolean((await kube.getOpt(`/api/v1/namespaces/${WL_NS}/pods/${WORKLOAD}`))?.spec?.nodeName);
  while (Date.now() < stopAt) {
    const workloadBoundBefore = await workloadBound();
    const pull = await pullPodOn(kube, pool, NODE_A);
    const node = await kube.getOpt(`/api/v1/nodes/${NODE_A}`);
    const workloadBoundAfter = await workloadBound();
    if (node) {
      const taints = ((node.spec?.taints ?? []) as Taint[]).map((t) => t.key);
      out.push({
        workloadBoundBefore,
        pullBound: pull !== undefined,
        tainted: taints.includes(GATE_TAINT.key),
        readyGateOnly: readyCondition(node)?.status === 'True' && taints.length === 1 && taints[0] === GATE_TAINT.key,
        workloadBoundAfter,
      });
    }
    if (workloadBoundAfter) break;
    await sleep(100);
  }
  return out;
}

/** The JSON payload of a JWT (no verification: the apiserver does that). */
function jwtClaims(token: string): Record<string, unknown> {
  const part = token.split('.')[1];
  if (!part) throw new Error('not a JWT');
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Asserts a write is rejected with 403, with every phrase in the apiserver's message. */
async function expectDenied(p: Promise<unknown>, ...phrases: string[]): Promise<void> {
  const e = await p.catch((x: unknown) => x);
  expect(e, 'the write was allowed').toBeInstanceOf(ApiError);
  const err = e as ApiError;
  expect(err.code, err.message).toBe(403);
  for (const ph of phrases) expect(err.message).toContain(ph);
}

describe('gating on real kubelets', () => {
  let objects: KubeObject[] = [];
  let gated: PoolImages;
  let failopen: PoolImages;
  let gatedKeys: PoolKeys;
  let failKeys: PoolKeys;
  let kube: Kube;
  let watch: NodeWatch;
  let sa: KubeHttp | undefined;

  beforeAll(async () => {
    // A kept cluster may still be deleting these from an earlier run.
    kubectl(['delete', 'namespace', NS, WL_NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    const dir = specDir('gating', [
      imageCache(NS, 'gated', [{ pool: 'gated', nodeSelector: { [SEL]: 'gated' }, images: GATED_IMAGES }]),
      imageCache(NS, 'failopen', [{ pool: 'failopen', nodeSelector: { [SEL]: 'failopen' }, images: [PARTIAL_OK, ABSENT] }], {
        gate: { deadline: `${DEADLINE_S}s` },
      }),
    ]);
    const { yaml } = synth([dir]);
    objects = yamlObjects(yaml);
    const pool = (id: string): PoolImages => {
      const p = poolsOf(objects).find((x) => x.pool === id);
      if (!p) throw new Error(`synth output has no pool ${id}`);
      return p;
    };
    gated = pool('gated');
    failopen = pool('failopen');
    gatedKeys = poolKeys(objects, gated);
    failKeys = poolKeys(objects, failopen);
    prepareImages(objects, [ABSENT]);
    expect(imageInRegistry(ABSENT), `${ABSENT} must be absent from the registry`).toBe(false);
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
    applyServerSide(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: WL_NS } }));
    ({ kube, watch } = await watchNodes(SEL));
  });

  afterAll(async () => {
    sa?.close();
    await cleanUp({ watch, kube, nodes: [NODE_A, NODE_B], namespaces: [NS, WL_NS] });
  });

  it('a node joining tainted: the pull pod runs, the node turns warm, the taint goes, a plain workload waits for it', async () => {
    // Created before the node exists: Pending from the start, with no toleration of the gate.
    applyServerSide(JSON.stringify(workloadPod()));
    const t = watch.expect(NODE_A);
    await addNode(NODE_A, { labels: { [SEL]: 'gated' }, taints: [GATE_TAINT], wait: false });
    const sampling = sampleJoin(kube, gated, Date.now() + 300_000);
    expect(await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000), `${NODE_A} Ready`).toBe(true);
    const removed = await until(t, (x) => x.taintsGoneAt.has(GATE_TAINT.key), Date.now() + 240_000);
    expect(removed, `gate taint removed from ${NODE_A}\n${describePool(gated)}`).toBe(true);
    const readyAt = t.readyAt as number;
    const goneAt = t.taintsGoneAt.get(GATE_TAINT.key) as number;
    // Both ends are first-seen times on one watch of the node (this process's clock, ms): first
    // event with Ready=True, first event without the taint.
    console.log(`taint removed ${secs(goneAt - readyAt)}s after Ready`);

    // The kubelet registered the node with the taint: it was there from the first event on.
    expect(t.taintsAt.get(GATE_TAINT.key)).toBe(t.registeredAt);
    const samples = await sampling;
    expect(
      samples.some((s) => s.pullBound && s.tainted),
      'pull pod bound while the taint was on the node',
    ).toBe(true);
    expect(
      samples.filter((s) => s.workloadBoundBefore && s.tainted),
      'workload bound while the taint was on the node',
    ).toEqual([]);
    expect(
      samples.some((s) => s.readyGateOnly && !s.workloadBoundAfter),
      "workload unbound while the gate was the Ready node's only taint",
    ).toBe(true);

    // The workload is scheduled once the taint is gone, and runs.
    await waitFor(
      `${WL_NS}/${WORKLOAD} Running on ${NODE_A}`,
      async () => {
        const p = await kube.get(`/api/v1/namespaces/${WL_NS}/pods/${WORKLOAD}`);
        return p.spec?.nodeName === NODE_A && p.status?.phase === 'Running';
      },
      120_000,
      500,
    );

    // The pull pod runs all its containers, the native sidecar among them. The sidecar started
    // before the taint went (it is what removes it). The holder's image containers did not: while
    // burst pullers pull, they wait behind the sidecar's startup probe, which lets them start once
    // the node is warm (src/reconciler/pool.ts releasesImages), so they run a moment after the
    // taint went. That every image was present before the taint went is the annotation's digests
    // and warmAt below.
    let pull: KubeObject | undefined;
    await waitFor(
      `every container of the pull pod on ${NODE_A} running`,
      async () => {
        pull = await pullPodOn(kube, gated, NODE_A);
        const all = [...(pull?.status?.initContainerStatuses ?? []), ...(pull?.status?.containerStatuses ?? [])];
        return all
          .filter((c: { name: string }) => c.name !== HELPER_CONTAINER)
          .every((c: { state?: { running?: unknown } }) => c.state?.running !== undefined);
      },
      60_000,
      500,
    );
    expect(pull, describePool(gated)).toBeDefined();
    const statuses = [...(pull?.status?.initContainerStatuses ?? []), ...(pull?.status?.containerStatuses ?? [])].filter(
      (c: { name: string }) => c.name !== HELPER_CONTAINER,
    ) as { name: string; state?: { running?: { startedAt: string } } }[];
    expect(statuses.map((c) => c.name).sort()).toEqual(
      runningContainers(pull?.spec as Parameters<typeof runningContainers>[0])
        .map((c) => c.name)
        .sort(),
    );
    expect(statuses.map((c) => c.name)).toContain(SIDECAR_CONTAINER);
    for (const c of statuses) expect(c.state?.running, `${c.name} running`).toBeDefined();
    const sidecarStart = statuses.find((c) => c.name === SIDECAR_CONTAINER)?.state?.running?.startedAt ?? '';
    // startedAt has second resolution, rounded down: it can only read earlier than the start.
    expect(Date.parse(sidecarStart), 'sidecar started before the taint went').toBeLessThanOrEqual(goneAt);

    // Label and annotation, written before the taint was removed (phase 1, then phase 2).
    const node = await kube.get(`/api/v1/nodes/${NODE_A}`);
    expect(node.metadata.labels?.[gatedKeys.label]).toBe('warm');
    expect(t.labelsAt.get(`${gatedKeys.label}=warm`)).toBeLessThanOrEqual(goneAt);
    const ann = statusAnnotation(node, gatedKeys.annotation);
    expect(ann).toMatchObject({ v: 1, pod: pull?.metadata.name, state: 'warm', images: GATED_IMAGES.length });
    expect(ann.failing).toBeUndefined();
    expect(Object.keys(ann.digests ?? {}).sort()).toEqual([...gated.images].sort());
    for (const ref of gated.images) {
      expect(ann.digests?.[ref]).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(nodeDigestOf(NODE_A, ref), `digest of ${ref} on ${NODE_A}`).toContain(ann.digests?.[ref]);
    }
    // ttwSeconds counts from the later of the Ready transition and the pod's creation (both with
    // second resolution, rounded down) to warmAt, rounded to 0.1 s.
    const readyTransition = Date.parse(readyCondition(node)?.lastTransitionTime ?? '');
    const podCreated = Date.parse(pull?.metadata.creationTimestamp ?? '');
    const warmAt = Date.parse(ann.warmAt ?? '');
    console.log(
      `(${NODE_A}: pull pod created ${secs(podCreated - readyTransition)}s after the Ready transition; ttwSeconds ${ann.ttwSeconds})`,
    );
    expect(warmAt).toBeLessThanOrEqual(goneAt);
    expect(ann.ttwSeconds).toBeGreaterThanOrEqual(0);
    expect(Math.abs(warmAt - Math.max(readyTransition, podCreated) - (ann.ttwSeconds ?? NaN) * 1000)).toBeLessThanOrEqual(60);
    expect(ann.ttwSeconds).toBeLessThanOrEqual((goneAt - readyTransition) / 1000);

    // One Normal Event Warm about the node, which also reports the removal.
    const events = await nodeEvents(kube, node, 'Warm');
    expect(events.length).toBe(1);
    expect(events[0]).toMatchObject({ type: 'Normal', involvedObject: { kind: 'Node', name: NODE_A } });
    expect(events[0]?.message).toContain(`removed gate taint ${GATE_TAINT.key}`);
  });

  it('fail-open: an unpullable image keeps the gate shut until the deadline, then partial + Warning Event', async () => {
    const t = watch.expect(NODE_B);
    await addNode(NODE_B, { labels: { [SEL]: 'failopen' }, taints: [GATE_TAINT], wait: false });
    expect(await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000), `${NODE_B} Ready`).toBe(true);
    const removed = await until(t, (x) => x.taintsGoneAt.has(GATE_TAINT.key), Date.now() + (DEADLINE_S + 180) * 1000);
    expect(removed, `gate taint removed from ${NODE_B}\n${describePool(failopen)}`).toBe(true);
    const goneAt = t.taintsGoneAt.get(GATE_TAINT.key) as number;
    const node = await kube.get(`/api/v1/nodes/${NODE_B}`);
    const pull = await pullPodOn(kube, failopen, NODE_B);
    expect(pull, describePool(failopen)).toBeDefined();
    // From the Ready condition's lastTransitionTime (what the sidecar counts from), to the first
    // watch event without the taint.
    const readyTransition = Date.parse(readyCondition(node)?.lastTransitionTime ?? '');
    const podCreated = Date.parse(pull?.metadata.creationTimestamp ?? '');
    console.log(`fail-open after ${secs(goneAt - readyTransition)}s`);
    console.log(
      `(deadline ${DEADLINE_S}s; pull pod created ${secs(podCreated - readyTransition)}s after Ready, first seen Ready ${secs((t.readyAt as number) - readyTransition)}s after the transition time)`,
    );
    // The origin is the later of Ready and the pod's creation; the gate must not open before.
    const origin = Math.max(readyTransition, podCreated);
    expect(goneAt - readyTransition).toBeGreaterThanOrEqual(DEADLINE_S * 1000 - TOLERANCE_MS);
    expect(goneAt - origin).toBeGreaterThanOrEqual(DEADLINE_S * 1000 - TOLERANCE_MS);
    expect(goneAt - origin, 'fail-open within 15 s of the deadline').toBeLessThanOrEqual((DEADLINE_S + 15) * 1000);

    expect(node.metadata.labels?.[failKeys.label]).toBe('partial');
    expect(t.labelsAt.get(`${failKeys.label}=partial`)).toBeLessThanOrEqual(goneAt);
    const ann = statusAnnotation(node, failKeys.annotation);
    expect(ann).toMatchObject({ v: 1, pod: pull?.metadata.name, state: 'partial', images: 2, present: 1 });
    expect(Object.keys(ann.digests ?? {})).toEqual([PARTIAL_OK]);
    expect(nodeDigestOf(NODE_B, PARTIAL_OK)).toContain(ann.digests?.[PARTIAL_OK]);
    expect(ann.failing?.map((f) => [f.image, f.reason])).toEqual([[ABSENT, 'ErrImagePull']]);

    const partial = await nodeEvents(kube, node, 'Partial');
    expect(partial.length).toBe(1);
    expect(partial[0]).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: NODE_B } });
    expect(partial[0]?.message).toContain(ABSENT);
    expect(partial[0]?.message).toMatch(/ErrImagePull|ImagePullBackOff/);
    console.log(`Partial event: ${partial[0]?.message}`);

    const have = new Set(nodeImages(NODE_B));
    expect(have.has(normalize(PARTIAL_OK))).toBe(true);
    expect(have.has(normalize(ABSENT))).toBe(false);
  });

  it("a real sidecar's projected token: denied on another node and for foreign keys, allowed on its own pool label", async () => {
    const pod = await pullPodOn(kube, gated, NODE_A);
    expect(pod, describePool(gated)).toBeDefined();
    const volumes = (pod?.spec?.volumes ?? []) as { name: string; projected?: { sources: { serviceAccountToken?: { path: string } }[] } }[];
    const vol = volumes.find((v) => v.projected?.sources.some((s) => s.serviceAccountToken));
    const tokenPath = vol?.projected?.sources.find((s) => s.serviceAccountToken)?.serviceAccountToken?.path;
    expect(vol && tokenPath, 'the pull pod mounts a projected ServiceAccount token').toBeTruthy();
    const file = join(
      nodePaths(NODE_A).kubeletRoot,
      'pods',
      pod?.metadata.uid as string,
      'volumes',
      'kubernetes.io~projected',
      vol?.name as string,
      tokenPath as string,
    );
    const token = readFileSync(file, 'utf8').trim();

    // ServiceAccountTokenPodNodeInfo (beta, on by default since 1.30, GA in 1.32) puts the node
    // into the pod-bound token; the policy reads it back as the node-name extra. The policy needs
    // admissionregistration.k8s.io/v1 (1.30), so wherever it runs the claim is there.
    const minor = Number(/^v?1\.(\d+)/.exec(VERSIONS.kubernetes)?.[1]);
    expect(minor).toBeGreaterThanOrEqual(30);
    const claims = jwtClaims(token)['kubernetes.io'] as { node?: { name?: string }; pod?: { name?: string; uid?: string } };
    expect(claims.pod?.name).toBe(pod?.metadata.name);
    expect(claims.node?.name).toBe(NODE_A);

    sa = new KubeHttp({ server: apiserverUrl(), ca: readFileSync(CA_CRT), token: () => token });
    const review = await sa.json<{ status: { userInfo: { username: string; extra?: Record<string, string[]> } } }>(
      'POST',
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    );
    expect(review.status.userInfo.username).toBe(`system:serviceaccount:${NS}:prewarm-reconciler`);
    expect(review.status.userInfo.extra?.[NODE_NAME_EXTRA]).toEqual([NODE_A]);

    const policy = `ValidatingAdmissionPolicy '${ACCESS_NAMES.policy}'`;
    // (a) adding a taint to the other node: RBAC allows `patch nodes`, the policy denies.
    const nodeB = await kube.get(`/api/v1/nodes/${NODE_B}`);
    const addTaint = (n: KubeObject): object[] => [
      (n.spec?.taints ?? []).length
        ? { op: 'add', path: '/spec/taints/-', value: { key: 'e2e.prewarm.dev/evil', effect: 'NoSchedule' } }
        : { op: 'add', path: '/spec/taints', value: [{ key: 'e2e.prewarm.dev/evil', effect: 'NoSchedule' }] },
    ];
    await expectDenied(
      sa.json('PATCH', `/api/v1/nodes/${NODE_B}`, addTaint(nodeB), 'application/json-patch+json'),
      policy,
      `may only write the node its pod runs on (token node: ${NODE_A}, target: ${NODE_B})`,
    );
    // The same taint on its own node is denied too, by the taint rule.
    await expectDenied(
      sa.json('PATCH', `/api/v1/nodes/${NODE_A}`, addTaint(await kube.get(`/api/v1/nodes/${NODE_A}`)), 'application/json-patch+json'),
      policy,
      'may only remove the gating taints',
    );

    // (b) a label outside prewarm.dev/ on its own node.
    const merge = (node: string, body: object): Promise<KubeObject> =>
      (sa as KubeHttp).json<KubeObject>('PATCH', `/api/v1/nodes/${node}`, body, 'application/strategic-merge-patch+json');
    await expectDenied(
      merge(NODE_A, { metadata: { labels: { 'e2e.example.com/team': 'x' } } }),
      policy,
      'may only change node labels under prewarm.dev/',
    );

    // (c) positive control: its own pool label on its own node, then restored.
    const changed = await merge(NODE_A, { metadata: { labels: { [gatedKeys.label]: 'partial' } } });
    expect(changed.metadata.labels?.[gatedKeys.label]).toBe('partial');
    const restored = await merge(NODE_A, { metadata: { labels: { [gatedKeys.label]: 'warm' } } });
    expect(restored.metadata.labels?.[gatedKeys.label]).toBe('warm');

    // Nothing denied got through.
    const after = { a: await kube.get(`/api/v1/nodes/${NODE_A}`), b: await kube.get(`/api/v1/nodes/${NODE_B}`) };
    for (const n of [after.a, after.b]) expect(((n.spec?.taints ?? []) as Taint[]).map((x) => x.key)).not.toContain('e2e.prewarm.dev/evil');
    expect(after.a.metadata.labels?.['e2e.example.com/team']).toBeUndefined();
  });

  it('losing the pool label: the pull pod goes and its sidecar removes the label and annotation on SIGTERM', async () => {
    const pod = await pullPodOn(kube, gated, NODE_A);
    expect(pod, describePool(gated)).toBeDefined();
    const before = await kube.get(`/api/v1/nodes/${NODE_A}`);
    expect(before.metadata.labels?.[gatedKeys.label]).toBe('warm');
    expect(before.metadata.annotations?.[gatedKeys.annotation]).toBeDefined();
    // The sidecar's whole log, streamed until the container exits.
    const logs = runAsync(
      [BIN.kubectl, `--kubeconfig=${kubeconfigPath()}`, '-n', NS, 'logs', '-f', pod?.metadata.name as string, '-c', SIDECAR_CONTAINER],
      { allowFail: true, timeoutMs: 120_000 },
    );
    await sleep(500);
    const t0 = Date.now();
    labelNode(NODE_A, { [SEL]: null });
    const podGone = waitFor(
      `pull pod ${pod?.metadata.name} deleted`,
      async () => (await kube.getOpt(`/api/v1/namespaces/${NS}/pods/${pod?.metadata.name as string}`)) === undefined,
      90_000,
      250,
    ).then(() => Date.now());
    const cleaned = waitFor(
      `${gatedKeys.label} and ${gatedKeys.annotation} removed from ${NODE_A}`,
      async () => {
        const n = await kube.get(`/api/v1/nodes/${NODE_A}`);
        return n.metadata.labels?.[gatedKeys.label] === undefined && n.metadata.annotations?.[gatedKeys.annotation] === undefined
          ? n
          : undefined;
      },
      60_000,
      250,
    ).then((n) => ({ node: n, at: Date.now() }));
    const [podGoneAt, { node, at: cleanedAt }] = await Promise.all([podGone, cleaned]);
    console.log(
      `pool label removed: prewarm label and annotation gone after ${secs(cleanedAt - t0)}s, pull pod object gone after ${secs(podGoneAt - t0)}s`,
    );
    // The pod object goes only once all its containers stopped: the sidecar cleaned up while alive.
    expect(cleanedAt).toBeLessThanOrEqual(podGoneAt);
    expect(Object.keys(node.metadata.labels ?? {}).filter((k) => k.startsWith('prewarm.dev/'))).toEqual([]);
    const log = (await logs).stdout;
    expect(log, log.slice(-3000)).toContain('"signal received; cleaning up"');
    expect(log).toContain('"signal":"SIGTERM"');
    expect(log).toContain('"cleaned up node label and annotation"');
  });
});
