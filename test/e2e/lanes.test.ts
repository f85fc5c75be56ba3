/**
 * E2E: burst pullers on real kubelets (the harness's kubelets pull in parallel:
 * `serializeImagePulls: false`).
 *
 * 1. A node joins, tainted and with the harness's CNI stand-in (NotReady until its CNI pod has
 *    pulled its own image and written the CNI config, as a cloud node is until its CNI runs; no
 *    extra delay), a pool of 5 images of the time-to-warm bench's sizes (8..48 MiB,
 *    128 MiB in all) with `lanes: 3`, selected by two labels, one of them `kubernetes.io/arch`, so
 *    its pods run the sleeper mounted from a ConfigMap instead of a helper init container
 *    (src/synth/sleeper.ts; the fail pool keeps the helper): the pullers appear beside the holder, every image lands in
 *    containerd, the node turns warm, the pullers go and the taint is removed. Prints time-to-warm
 *    (Ready → warm label, first seen on one node watch) against a raw parallel `crictl pull` of
 *    the same images on a bare containerd in the same run and the pod floor (harness/floor.ts:
 *    Ready → a one-container pod whose image is present seen Running, on a second node that joins
 *    the same way after it: the least any pod-based puller takes here), and the join's timeline
 *    (the code of `prewarm status --node`).
 * 2. Adding one image to the pool rolls the holder and exactly the pullers whose images the split
 *    changes (src/synth/lanes.ts: two of the three here), no other; the node ends warm with the new
 *    image, and the pullers leave again.
 * 3. A pool with an image that cannot be pulled: the node turns partial at the deadline, with
 *    the reason, the taint is removed, and no puller is left on it.
 *
 * After every e2e test, test/e2e/setup.ts checks that no puller is left on a warm or partial node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawPull, startBareRuntime, stopBareRuntime } from '../../harness/cluster/bare.js';
import { addNode, kubectl } from '../../harness/cluster/cluster.js';
import { NODE_ARCH, REGISTRY } from '../../harness/cluster/config.js';
import { ensureStandIn, imageInRegistry, normalize } from '../../harness/cluster/images.js';
import { applyFloor, floorRunningAt } from '../../harness/floor.js';
import { nodeImages, nodeImagesAsync, type Taint } from '../../harness/cluster/node.js';
import type { Kube } from '../../harness/kube.js';
import { podSpecOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { type NodeWatch, until } from '../../harness/nodes.js';
import { TimelineRecorder } from '../../harness/timeline-recorder.js';
import { pullersOnNode } from '../../harness/pullers.js';
import { secs, waitFor } from '../../harness/time.js';
import { parseAnnotation } from '../../src/contract/annotation.js';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/contract/names.js';
import { buildTimeline } from '../../src/status/timeline.js';
import { renderTimelineText } from '../../src/status/timeline-render.js';
import { nodeAnnotationKey } from '../../src/contract/identity.js';
import { applyServerSide, cleanUp, imageCache, specDir, watchNodes } from './helpers.js';
import { isHolder, isPuller, poolOf } from '../../src/contract/roles.js';
import { parseImageRef, type ImageRef } from '../../src/oci/reference.js';
import { pullerLanes } from '../../src/synth/lanes.js';
import { HELPER_CONTAINER, pullerDaemonSetName } from '../../src/synth/naming.js';
import { ARCH_LABEL } from '../../src/synth/sleeper.js';

const NS = 'e2e-lanes';
const SEL = 'e2e.prewarm.dev/lanes';
const NODE = 'lanes-node';
const FAIL_NODE = 'lanes-fail';
const RAW_NODE = 'lanes-raw';
const FLOOR_NODE = 'lanes-floor';
const FLOOR_NS = 'e2e-lanes-floor';
const POOL = 'lanes';
const FAIL_POOL = 'lanes-fail';
const LANES = 3;
const DEADLINE_S = 30;
const GATE: Taint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };
/** The time-to-warm bench's stand-in sizes (MiB). */
const SIZES_MIB = [8, 16, 24, 32, 48];
const IMAGES = SIZES_MIB.map((_, i) => `${REGISTRY.plain}/e2e/lanes-${i + 1}:v1`);
const ADDED = `${REGISTRY.plain}/e2e/lanes-6:v1`;
/** Never pushed: every pull of it fails. */
const ABSENT = `${REGISTRY.plain}/e2e/lanes-absent:v1`;

/** A reference as synth reads it. */
function imageRef(text: string): ImageRef {
  const r = parseImageRef(text);
  if (!r.ok) throw new Error(r.error);
  return r.ref;
}

/** The spec of both pools, with `images` in the first. */
function specs(images: readonly string[]): string {
  return specDir('lanes', [
    // Two labels, ANDed; naming the architecture lets the pods run the sleeper (no helper init container).
    imageCache(NS, 'lanes', [{ pool: POOL, nodeSelector: { [SEL]: 'yes', [ARCH_LABEL]: NODE_ARCH }, images: [...images] }], {
      lanes: LANES,
    }),
    imageCache(NS, 'lanes-fail', [{ pool: FAIL_POOL, nodeSelector: { [SEL]: 'fail' }, images: [IMAGES[0] as string, ABSENT] }], {
      lanes: LANES,
      gate: { deadline: `${DEADLINE_S}s` },
    }),
  ]);
}

/** DaemonSets of the pool by name: their generation, and whether each is the holder. */
async function poolDaemonSets(kube: Kube, pool: string): Promise<Map<string, { generation: number; holder: boolean }>> {
  const l = await kube.list(`/apis/apps/v1/namespaces/${NS}/daemonsets`);
  return new Map(
    l.items
      .filter((d) => poolOf(d.metadata.labels) === pool)
      .map((d) => [
        d.metadata.name,
        {
          generation: (d.metadata as { generation?: number }).generation ?? 0,
          holder: isHolder(d.spec?.selector?.matchLabels),
        },
      ]),
  );
}

describe('lanes on real kubelets', () => {
  let kube: Kube;
  let watch: NodeWatch;
  let pullerDaemonSets = 0;
  // Pools named in the spec keep their name as id (src/contract/identity.ts poolId).
  const poolId = POOL;
  const failPoolId = FAIL_POOL;

  beforeAll(async () => {
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    const { yaml } = synth([specs(IMAGES)]);
    const objects = yamlObjects(yaml);
    pullerDaemonSets = objects.filter(
      (o) => o.kind === 'DaemonSet' && isPuller(o.metadata.labels) && poolOf(o.metadata.labels) === poolId,
    ).length;
    // The pool names its architecture: its pods run the sleeper from a ConfigMap, with no helper
    // init container; the fail pool does not, and keeps the helper, so both paths run here.
    const initNames = (pool: string) =>
      objects
        .filter((o) => o.kind === 'DaemonSet' && poolOf(o.metadata.labels) === pool)
        .map((o) => (podSpecOf(o)?.initContainers ?? []).map((c) => c.name));
    expect(initNames(poolId).flat()).not.toContain(HELPER_CONTAINER);
    expect(initNames(failPoolId).every((names) => names.includes(HELPER_CONTAINER))).toBe(true);
    expect(objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('prewarm-sleeper-'))).toHaveLength(1);
    SIZES_MIB.forEach((mib, i) => ensureStandIn(IMAGES[i] as string, { sizeBytes: mib << 20 }));
    ensureStandIn(ADDED, { sizeBytes: 8 << 20 });
    prepareImages(objects, [ABSENT]);
    expect(imageInRegistry(ABSENT), `${ABSENT} must be absent from the registry`).toBe(false);
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
    ({ kube, watch } = await watchNodes(SEL));
  });

  afterAll(() => cleanUp({ watch, kube, nodes: [NODE, FAIL_NODE, FLOOR_NODE], bareRuntimes: [RAW_NODE], namespaces: [NS, FLOOR_NS] }));

  it('a node joins: pullers appear, the images land, the node turns warm, the pullers go, the taint is removed', async () => {
    expect(pullerDaemonSets, 'synth emits pullers for lanes: 3 over 5 images').toBeGreaterThan(0);
    const t = watch.expect(NODE);
    const recorder = new TimelineRecorder(kube, NODE);
    await recorder.start();
    // Every real node has a network start-up window between registering and Ready (its CNI's pod
    // pulls and starts first): the kubelet is up by Ready, as it is not on a harness node whose CNI
    // config is in place from the start (kubelet log: pods watched 0.55 s after Ready, sandboxes
    // 2 s after it). The pool's pods do not tolerate not-ready, so they still start at Ready.
    await addNode(NODE, { labels: { [SEL]: 'yes' }, taints: [GATE], cniStandIn: {}, wait: false });
    // Only the node watch and the recorder's watches run while the node warms: no polling of our
    // own loads the apiserver during the measured window. That the pullers ran on the node is
    // read from the recorded timeline below.
    expect(await until(t, (x) => x.taintsGoneAt.has(GATE.key), Date.now() + 300_000), `gate taint removed from ${NODE}`).toBe(true);

    const labelKey = `prewarm.dev/${poolId}`;
    expect(await until(t, (x) => x.labelsAt.has(`${labelKey}=warm`), Date.now() + 10_000)).toBe(true);
    const have = new Set(nodeImages(NODE));
    for (const ref of IMAGES) expect(have.has(normalize(ref)), `${ref} in containerd on ${NODE}`).toBe(true);
    // Warm: the DaemonSet controller removes the pullers (NotIn [warm, partial]).
    await waitFor(`pullers gone from ${NODE}`, async () => (await pullersOnNode(kube, NS, NODE, poolId)).length === 0, 120_000, 500);
    recorder.stop();

    const daemonSets = (await kube.list(`/apis/apps/v1/namespaces/${NS}/daemonsets`)).items;
    const timeline = buildTimeline(recorder.input(daemonSets));
    console.log(renderTimelineText(timeline, 80));
    // The timeline saw the join as it happened: the holder and every puller, each image pulled once at least.
    const poolPods = timeline.rows.filter((r) => r.kind === 'pod' && r.pod.startsWith(`prewarm-${poolId}-`));
    expect(poolPods.filter((r) => r.label === 'holder')).toHaveLength(1);
    expect(poolPods.filter((r) => r.label.startsWith('puller '))).toHaveLength(pullerDaemonSets);
    for (const ref of IMAGES)
      expect(
        timeline.rows.some((r) => r.label === ref && r.outcome === 'pulled'),
        `${ref} pulled`,
      ).toBe(true);
    expect(timeline.marks.map((m) => m.label)).toEqual(expect.arrayContaining(['Ready', `warm ${poolId}`, 'taint removed']));

    const warmMs = (t.labelsAt.get(`${labelKey}=warm`) as number) - (t.readyAt as number);
    await startBareRuntime(RAW_NODE);
    const rawMs = await rawPull(RAW_NODE, IMAGES);
    await stopBareRuntime(RAW_NODE);
    // The pod floor, on a node that joins as this one did (CNI stand-in), once this one is quiet.
    kubectl(['delete', 'namespace', FLOOR_NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    await applyFloor(kube, FLOOR_NS, { [SEL]: 'floor' });
    const f = watch.expect(FLOOR_NODE);
    await addNode(FLOOR_NODE, { labels: { [SEL]: 'floor' }, cniStandIn: {}, wait: false });
    expect(await until(f, (x) => x.readyAt !== undefined, Date.now() + 120_000), `${FLOOR_NODE} Ready`).toBe(true);
    const floorAt = await floorRunningAt(kube, FLOOR_NS, FLOOR_NODE, (f.readyAt as number) + 120_000);
    expect(floorAt, `the floor pod Running on ${FLOOR_NODE}`).toBeDefined();
    const floorMs = (floorAt as number) - (f.readyAt as number);
    console.log(
      `time-to-warm lanes ${NODE}: ${secs(warmMs, 2)}s (raw pull ${secs(rawMs, 2)}s, ratio ${(warmMs / rawMs).toFixed(1)}; pod floor ${secs(floorMs, 2)}s) [${IMAGES.length} images, ${LANES} lanes, CNI stand-in]`,
    );
  });

  it('adding one image rolls the holder and only the pullers the split changes; the node ends warm with it', async () => {
    const before = await poolDaemonSets(kube, poolId);
    const { yaml } = synth([specs([...IMAGES, ADDED])]);
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
    const after = await poolDaemonSets(kube, poolId);
    const changed = [...after].filter(([name, d]) => before.get(name)?.generation !== d.generation);
    const removed = [...before.keys()].filter((name) => !after.has(name));
    expect(removed, 'no DaemonSet of the pool removed').toEqual([]);
    expect(changed.filter(([, d]) => d.holder).length, 'the holder rolls').toBe(1);
    // The split is even, so one added image can move others (src/synth/lanes.ts): the pullers that
    // roll must be exactly the lanes whose images changed, and no unchanged lane may roll.
    const lanesOf = (images: readonly string[]) =>
      new Map(
        pullerLanes(images.map(imageRef), LANES).map((l) => [
          pullerDaemonSetName(poolId, l.key),
          l.images
            .map((r) => r.canonical)
            .sort()
            .join(','),
        ]),
      );
    const [was, now] = [lanesOf(IMAGES), lanesOf([...IMAGES, ADDED])];
    const expected = [...now.keys()].filter((name) => was.get(name) !== now.get(name)).sort();
    expect(
      changed
        .filter(([, d]) => !d.holder)
        .map(([n]) => n)
        .sort(),
      'pullers rolled',
    ).toEqual(expected);

    // The new holder's sidecar marks the node warm once the new image is there; pullers leave again.
    await waitFor(
      `${ADDED} in containerd on ${NODE}`,
      async () => new Set(await nodeImagesAsync(NODE)).has(normalize(ADDED)),
      180_000,
      1000,
    );
    await waitFor(
      `${NODE} warm again with ${IMAGES.length + 1} images`,
      async () => {
        const node = await kube.get(`/api/v1/nodes/${NODE}`);
        const ann = parseAnnotation(node.metadata.annotations?.[nodeAnnotationKey(poolId)]);
        return node.metadata.labels?.[`prewarm.dev/${poolId}`] === 'warm' && ann?.images === IMAGES.length + 1;
      },
      180_000,
      1000,
    );
    await waitFor(`pullers gone from ${NODE}`, async () => (await pullersOnNode(kube, NS, NODE, poolId)).length === 0, 120_000, 500);
  });

  it('an image that cannot be pulled: partial at the deadline, with the reason, the taint removed, no puller left', async () => {
    const t = watch.expect(FAIL_NODE);
    await addNode(FAIL_NODE, { labels: { [SEL]: 'fail' }, taints: [GATE], wait: false });
    const labelKey = `prewarm.dev/${failPoolId}`;
    expect(await until(t, (x) => x.taintsGoneAt.has(GATE.key), Date.now() + 240_000), `gate taint removed from ${FAIL_NODE}`).toBe(true);
    expect(await until(t, (x) => x.labelsAt.has(`${labelKey}=partial`), Date.now() + 10_000)).toBe(true);
    // Not before the deadline (the sidecar counts from the node's Ready; allow the second-resolution clock).
    expect((t.taintsGoneAt.get(GATE.key) as number) - (t.readyAt as number)).toBeGreaterThanOrEqual((DEADLINE_S - 2) * 1000);
    const node = await kube.get(`/api/v1/nodes/${FAIL_NODE}`);
    const ann = parseAnnotation(node.metadata.annotations?.[nodeAnnotationKey(failPoolId)]);
    expect(ann?.state).toBe('partial');
    expect(ann?.failing?.map((f) => f.image)).toEqual([ABSENT]);
    expect(ann?.failing?.[0]?.reason).toMatch(/ErrImagePull|ImagePullBackOff/);
    await waitFor(
      `pullers gone from ${FAIL_NODE}`,
      async () => (await pullersOnNode(kube, NS, FAIL_NODE, failPoolId)).length === 0,
      60_000,
      500,
    );
  });
});
