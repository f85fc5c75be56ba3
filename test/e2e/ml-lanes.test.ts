/**
 * E2E: an ML-shaped pool split by bytes on real kubelets (parallel pulls).
 *
 * The pool is the time-to-warm bench's `ml` set (two serving images with most of the bytes, one
 * mid-sized image, two small tools: 192, 160, 48, 8 and 4 MiB) at the default lanes. `prewarm pin`
 * of its spec folder against the harness's registry pins every digest and writes `prewarm.lock`
 * with each image's compressed size; synth reads the lock and splits the pullers by bytes, so the
 * two large images land on pullers of their own. A node joins, tainted and with the harness's CNI
 * stand-in: every image lands in containerd at its pinned digest, the node turns warm, the pullers
 * go and the taint is removed.
 *
 * Prints `time-to-warm ml-lanes <node>` (Ready → warm label) against a raw parallel `crictl pull`
 * of the same images on a bare containerd in the same run, with its target beside it
 * (1.1 × raw + 2 s). How soon is a speed figure: the line reports it and `bench:time-to-warm`
 * (sets ml and ml5, `lanes-default-bytes`) measures it; this test asserts the split and the warm-up.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawPull, startBareRuntime, stopBareRuntime } from '../../harness/cluster/bare.js';
import { addNode, kubectl } from '../../harness/cluster/cluster.js';
import { NODE_ARCH, REGISTRY } from '../../harness/cluster/config.js';
import { containerdName, ensureStandIn, normalize } from '../../harness/cluster/images.js';
import { nodeImages, type Taint } from '../../harness/cluster/node.js';
import type { Kube } from '../../harness/kube.js';
import { buildProject, pinSpecs, podSpecOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { type NodeWatch, until } from '../../harness/nodes.js';
import { pullersOnNode } from '../../harness/pullers.js';
import { secs, waitFor } from '../../harness/time.js';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/contract/names.js';
import { isPuller, poolOf } from '../../src/contract/roles.js';
import { LOCK_FILE, parseLock } from '../../src/imagecache/sizes.js';
import { ARCH_LABEL } from '../../src/synth/sleeper.js';
import { applyServerSide, cleanUp, imageCache, specDir, watchNodes } from './helpers.js';

const NS = 'e2e-ml-lanes';
const SEL = 'e2e.prewarm.dev/ml-lanes';
const NODE = 'ml-lanes-node';
const RAW_NODE = 'ml-lanes-raw';
const POOL = 'ml-lanes';
const GATE: Taint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };
const MIB = 1 << 20;
/** The bench's `ml` set (MiB): a GPU pool at 1/16 scale. */
const SIZES_MIB = [192, 160, 48, 8, 4];
const IMAGES = SIZES_MIB.map((_, i) => `${REGISTRY.plain}/e2e/ml-lanes-${i + 1}:v1`);
/** The two images that hold most of the bytes: each must get a puller of its own. */
const LARGE = IMAGES.slice(0, 2);

/** The image's repository (`host/path`), the part a pinned container image shares with its tag. */
const repoOf = (ref: string): string => normalize(ref).replace(/:[^:/]+$/, '');

describe('an ML pool split by bytes on real kubelets', () => {
  let kube: Kube;
  let watch: NodeWatch;
  /** Each puller's images (by tag), from the synthesized DaemonSets. */
  let lanes: string[][] = [];
  /** The digest `pin` recorded for each image (by tag). */
  const digests = new Map<string, string>();

  beforeAll(async () => {
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    SIZES_MIB.forEach((mib, i) => ensureStandIn(IMAGES[i] as string, { sizeBytes: mib * MIB }));
    const dir = specDir('ml-lanes', [
      imageCache(NS, 'ml', [{ pool: POOL, nodeSelector: { [SEL]: 'yes', [ARCH_LABEL]: NODE_ARCH }, images: [...IMAGES] }]),
    ]);
    buildProject();
    await pinSpecs(dir);
    const lockFile = join(dir, LOCK_FILE);
    const { lock, diagnostics } = parseLock(readFileSync(lockFile, 'utf8'), lockFile);
    expect(diagnostics).toEqual([]);
    for (const [i, ref] of IMAGES.entries()) {
      const entry = lock?.entries.get(normalize(ref));
      expect(entry, `${ref} in ${LOCK_FILE}`).toBeDefined();
      // Compressed bytes of config and layers: the stand-in's incompressible blob and a little more.
      expect(entry?.compressed).toBeGreaterThanOrEqual((SIZES_MIB[i] as number) * MIB);
      expect(entry?.compressed).toBeLessThan((SIZES_MIB[i] as number) * MIB + MIB);
      digests.set(ref, entry?.digest ?? '');
    }

    const { yaml } = synth([dir]);
    const objects = yamlObjects(yaml);
    const byRepo = new Map(IMAGES.map((ref) => [repoOf(ref), ref]));
    lanes = objects
      .filter((o) => o.kind === 'DaemonSet' && isPuller(o.metadata.labels) && poolOf(o.metadata.labels) === POOL)
      .map((o) => (podSpecOf(o)?.containers ?? []).flatMap((c) => byRepo.get(c.image.split('@')[0]?.replace(/:[^:/]+$/, '') ?? '') ?? []));
    // Pinned references are not the harness's to build: the pool's images are pushed above.
    const pinned = objects.flatMap((o) => (podSpecOf(o)?.containers ?? []).map((c) => c.image)).filter((i) => i.includes('@'));
    prepareImages(objects, pinned);
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
    ({ kube, watch } = await watchNodes(SEL));
  });

  afterAll(() => cleanUp({ watch, kube, nodes: [NODE], bareRuntimes: [RAW_NODE], namespaces: [NS] }));

  it('pin records sizes; synth gives each large image its own puller; the node warms with every pinned image', async () => {
    // The default lanes (4) over 5 images: 4 pullers, longest first, so 192 | 160 | 48 | 8+4.
    expect(lanes.flat().sort(), 'every image on exactly one puller').toEqual([...IMAGES].sort());
    for (const ref of LARGE)
      expect(
        lanes.find((l) => l.includes(ref)),
        `${ref} alone on its puller`,
      ).toEqual([ref]);
    const mib = (l: readonly string[]) => l.reduce((a, ref) => a + (SIZES_MIB[IMAGES.indexOf(ref)] as number), 0);
    expect(Math.max(...lanes.map(mib)), 'the largest puller carries only the largest image').toBe(SIZES_MIB[0]);

    const t = watch.expect(NODE);
    await addNode(NODE, { labels: { [SEL]: 'yes' }, taints: [GATE], cniStandIn: {}, wait: false });
    expect(await until(t, (x) => x.taintsGoneAt.has(GATE.key), Date.now() + 300_000), `gate taint removed from ${NODE}`).toBe(true);
    const labelKey = `prewarm.dev/${POOL}`;
    expect(await until(t, (x) => x.labelsAt.has(`${labelKey}=warm`), Date.now() + 10_000), `${NODE} warm`).toBe(true);
    const have = new Set(nodeImages(NODE));
    for (const ref of IMAGES)
      expect(have.has(containerdName(`${ref}@${digests.get(ref) ?? ''}`)), `${ref} at its pinned digest on ${NODE}`).toBe(true);
    await waitFor(`pullers gone from ${NODE}`, async () => (await pullersOnNode(kube, NS, NODE, POOL)).length === 0, 120_000, 500);

    const warmMs = (t.labelsAt.get(`${labelKey}=warm`) as number) - (t.readyAt as number);
    await startBareRuntime(RAW_NODE);
    const rawMs = await rawPull(RAW_NODE, IMAGES);
    await stopBareRuntime(RAW_NODE);
    const split = lanes.map((l) => l.map((ref) => SIZES_MIB[IMAGES.indexOf(ref)]).join('+')).join(' | ');
    console.log(
      `time-to-warm ml-lanes ${NODE}: ${secs(warmMs, 2)}s (raw pull ${secs(rawMs, 2)}s, ratio ${(warmMs / rawMs).toFixed(1)}; target 1.1 × raw + 2 s = ${secs(1.1 * rawMs + 2000, 2)}s) [${IMAGES.length} images, ${mib(IMAGES)} MiB, pullers by bytes ${split} MiB, CNI stand-in]`,
    );
  });
});
