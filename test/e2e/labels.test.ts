/**
 * E2E: a node gaining a pool's label gets that pool's images; losing it loses the
 * pool's pod, and the pool's images are unpinned (no running container uses them any more).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, removeNode } from '../../harness/cluster/cluster.js';
import { nodeImages } from '../../harness/cluster/node.js';
import { sleep, waitFor } from '../../harness/time.js';
import { normalize } from '../../harness/cluster/images.js';
import { type PoolImages, poolsOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import {
  applyServerSide,
  imageCache,
  labelNode,
  poolPodOnNode,
  containersUsing,
  specDir,
  waitImagesOnNode,
  waitPoolPodRunning,
} from './helpers.js';

const NODE = 'lbl-node';
const NS = 'e2e-labels';
const POOL_LABEL = 'e2e.prewarm.dev/labels-pool';
const IMAGES = ['registry.k8s.io/e2e/label-app:1.0', 'quay.io/e2e/label-sidecar:2.1'];

describe('pool label changes on a running node', () => {
  let pool: PoolImages;

  beforeAll(async () => {
    const dir = specDir('labels', [
      imageCache(NS, 'label-pool', [{ pool: 'labelled', nodeSelector: { [POOL_LABEL]: 'yes' }, images: IMAGES }]),
    ]);
    const { yaml } = synth([dir]);
    const objects = yamlObjects(yaml);
    prepareImages(objects);
    const found = poolsOf(objects).find((p) => p.namespace === NS);
    if (!found) throw new Error(`synth output has no pool in ${NS}`);
    pool = found;
    await addNode(NODE);
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
  });

  afterAll(async () => {
    await removeNode(NODE).catch(() => undefined);
  });

  it('has no pod and none of the images before the label', async () => {
    await sleep(3_000);
    expect(poolPodOnNode(pool, NODE)).toBeUndefined();
    const have = new Set(nodeImages(NODE));
    for (const ref of IMAGES) expect(have.has(normalize(ref))).toBe(false);
  });

  it('gaining the label brings the pool pod and its images', async () => {
    const t0 = Date.now();
    labelNode(NODE, { [POOL_LABEL]: 'yes' });
    await waitImagesOnNode(NODE, pool.images, 180_000);
    await waitPoolPodRunning(pool, NODE);
    console.log(`label -> images on ${NODE}: ${((Date.now() - t0) / 1000).toFixed(2)}s`);
    // While the pod runs, its containers pin the images: one each once the burst pullers have
    // left (they run only while the node warms).
    await waitFor(
      `one running container per image on ${NODE}`,
      () => containersUsing(NODE, pool.images).length === pool.images.length,
      120_000,
      1000,
    );
  });

  it('losing the label removes the pod and unpins its images', async () => {
    const before = poolPodOnNode(pool, NODE);
    expect(before).toBeDefined();
    labelNode(NODE, { [POOL_LABEL]: null });
    await waitFor(`pool pod gone from ${NODE}`, () => poolPodOnNode(pool, NODE) === undefined, 120_000, 500);
    // No running container on the node uses any of the pool's images any more.
    await waitFor(`containers of the pool stopped on ${NODE}`, () => containersUsing(NODE, pool.images).length === 0, 60_000, 500);
    // The images themselves are still cached (unpinned, now collectable by kubelet image GC).
    const have = new Set(nodeImages(NODE));
    for (const ref of pool.images) expect(have.has(normalize(ref)), `${ref} still cached`).toBe(true);
  });
});
