/**
 * E2E (issue 14): burst pullers on real kubelets (the harness's kubelets pull in parallel:
 * `serializeImagePulls: false`). A node joins, tainted, a pool of 5 images of the time-to-warm
 * bench's sizes (8..48 MiB, 128 MiB in all) with `lanes: 3`: the pullers appear beside the
 * holder, every image lands in containerd, the node turns warm, the pullers go and the taint is
 * removed. Prints time-to-warm (Ready → warm label, first seen on one node watch) against a raw
 * parallel `crictl pull` of the same images on a bare containerd in the same run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawPull, startBareRuntime, stopBareRuntime } from '../../harness/cluster/bare.js';
import { addNode, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { REGISTRY } from '../../harness/cluster/config.js';
import { ensureStandIn, normalize } from '../../harness/cluster/images.js';
import { nodeImages, type Taint } from '../../harness/cluster/node.js';
import { Kube, type KubeObject } from '../../harness/kube.js';
import { prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { NodeWatch, until } from '../../harness/nodes.js';
import { secs, waitFor } from '../../harness/time.js';
import { DEFAULT_GATE_TAINT_KEY, LABEL_POOL_MEMBER, LABEL_PULLER } from '../../src/contract/names.js';
import { applyServerSide, imageCache, specDir } from './helpers.js';

const NS = 'e2e-lanes';
const SEL = 'e2e.prewarm.dev/lanes';
const NODE = 'lanes-node';
const RAW_NODE = 'lanes-raw';
const POOL = 'lanes';
const LANES = 3;
const GATE: Taint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };
/** The time-to-warm bench's stand-in sizes (MiB). */
const SIZES_MIB = [8, 16, 24, 32, 48];
const IMAGES = SIZES_MIB.map((_, i) => `${REGISTRY.plain}/e2e/lanes-${i + 1}:v1`);

/** The pool's pods on the node that are pullers (not being deleted). */
async function pullersOn(kube: Kube, node: string): Promise<KubeObject[]> {
  const l = await kube.list(`/api/v1/namespaces/${NS}/pods`, {
    labelSelector: `${LABEL_POOL_MEMBER}=${POOL},${LABEL_PULLER}`,
    fieldSelector: `spec.nodeName=${node}`,
  });
  return l.items;
}

describe('lanes on real kubelets', () => {
  let kube: Kube;
  let watch: NodeWatch;
  let pullerDaemonSets = 0;

  beforeAll(async () => {
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    const dir = specDir('lanes', [
      imageCache(NS, 'lanes', [{ pool: POOL, nodeSelector: { [SEL]: 'yes' }, images: IMAGES }], { lanes: LANES }),
    ]);
    const { yaml } = synth([dir]);
    const objects = yamlObjects(yaml);
    pullerDaemonSets = objects.filter((o) => o.kind === 'DaemonSet' && o.metadata.labels?.[LABEL_PULLER] !== undefined).length;
    SIZES_MIB.forEach((mib, i) => ensureStandIn(IMAGES[i] as string, { sizeBytes: mib << 20 }));
    prepareImages(objects);
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
    kube = new Kube();
    watch = new NodeWatch(kube, SEL);
    await watch.start();
  });

  afterAll(async () => {
    watch?.close();
    kube?.close();
    await removeNode(NODE).catch(() => undefined);
    await stopBareRuntime(RAW_NODE).catch(() => undefined);
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false'], { allowFail: true });
  });

  it('a node joins: pullers appear, the images land, the node turns warm, the pullers go, the taint is removed', async () => {
    expect(pullerDaemonSets, 'synth emits pullers for lanes: 3 over 5 images').toBeGreaterThan(0);
    const t = watch.expect(NODE);
    await addNode(NODE, { labels: { [SEL]: 'yes' }, taints: [GATE], wait: false });
    // Sample the pullers until the taint is gone: they must have run on the warming node.
    let sawPullers = 0;
    const stopAt = Date.now() + 300_000;
    while (Date.now() < stopAt && !t.taintsGoneAt.has(GATE.key)) {
      sawPullers = Math.max(sawPullers, (await pullersOn(kube, NODE)).length);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(t.taintsGoneAt.has(GATE.key), `gate taint removed from ${NODE}`).toBe(true);
    expect(sawPullers, 'puller pods on the warming node').toBe(pullerDaemonSets);

    const labelKey = `prewarm.dev/${POOL}`;
    expect(await until(t, (x) => x.labelsAt.has(`${labelKey}=warm`), Date.now() + 10_000)).toBe(true);
    const have = new Set(nodeImages(NODE));
    for (const ref of IMAGES) expect(have.has(normalize(ref)), `${ref} in containerd on ${NODE}`).toBe(true);
    // Warm: the DaemonSet controller removes the pullers (NotIn [warm, partial]).
    await waitFor(`pullers gone from ${NODE}`, async () => (await pullersOn(kube, NODE)).length === 0, 120_000, 500);

    const warmMs = (t.labelsAt.get(`${labelKey}=warm`) as number) - (t.readyAt as number);
    await startBareRuntime(RAW_NODE);
    const rawMs = await rawPull(RAW_NODE, IMAGES);
    await stopBareRuntime(RAW_NODE);
    console.log(
      `time-to-warm lanes ${NODE}: ${secs(warmMs, 2)}s (raw pull ${secs(rawMs, 2)}s, ratio ${(warmMs / rawMs).toFixed(1)}) [${IMAGES.length} images, ${LANES} lanes]`,
    );
  });
});
