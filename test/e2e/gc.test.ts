/**
 * E2E: kubelet image GC runs (deliberately low thresholds on this node) and the
 * pool's cached images survive while the pull pod runs, while a non-cached control image (pulled
 * on the node, used by nothing) is removed.
 *
 * The kubelet runs image GC every 5 minutes (ImageGCPeriod, not configurable); its pass at
 * start-up always fails here ("invalid capacity 0 on image filesystem": stats not initialised
 * yet), so the first effective pass is ~5 min after the kubelet starts. An image is collected only
 * if the kubelet saw it before the pass began, so the test restarts the kubelet after pulling the
 * control image and waits for the pass after that (bounded: 6 min after the restart).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, removeNode } from '../../harness/cluster/cluster.js';
import { normalize, TEST_IMAGES } from '../../harness/cluster/images.js';
import { crictl, loadSpec, nodeImages, restartKubelet } from '../../harness/cluster/node.js';
import { logFile } from '../../harness/cluster/sh.js';
import { sleep } from '../../harness/time.js';
import { readFileSync } from 'node:fs';
import { type PoolImages, poolsOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { applyServerSide, containersUsing, imageCache, specDir, waitImagesOnNode, waitPoolPodRunning } from './helpers.js';

const NODE = 'gc-node';
const SEL = 'e2e.prewarm.dev/gc';
const CACHED = ['docker.io/e2e/gc-cached-a:1.0', TEST_IMAGES.big];

describe('kubelet image GC', () => {
  let pool: PoolImages;
  let readyAt = 0;

  beforeAll(async () => {
    const dir = specDir('gc', [imageCache('e2e-gc', 'gc', [{ pool: 'gc', nodeSelector: { [SEL]: 'yes' }, images: CACHED }])]);
    const { yaml } = synth([dir]);
    const objects = yamlObjects(yaml);
    prepareImages(objects);
    const p = poolsOf(objects).find((x) => x.namespace === 'e2e-gc');
    if (!p) throw new Error('no gc pool');
    pool = p;
    // Any usage above 1% of the image filesystem triggers GC down to 0%: everything unused goes.
    ({ readyAt } = await addNode(NODE, {
      labels: { [SEL]: 'yes' },
      // 0s would be defaulted to 2m by the kubelet; 1s is the smallest age that is kept.
      imageGc: { highThresholdPercent: 1, lowThresholdPercent: 0, minimumGcAge: '1s' },
      verbosity: 2,
    }));
    expect(applyServerSide(yaml).warnings).toEqual([]);
  });

  afterAll(async () => {
    await removeNode(NODE).catch(() => undefined);
  });

  it('removes a non-cached image and keeps the cached ones while the pod runs', async () => {
    await waitImagesOnNode(NODE, CACHED, 180_000);
    await waitPoolPodRunning(pool, NODE);
    crictl(NODE, ['pull', TEST_IMAGES.gcControl]);
    expect(nodeImages(NODE)).toContain(normalize(TEST_IMAGES.gcControl));
    // The kubelet records an image's first sighting in the same pass that would collect it, so a
    // freshly pulled image is always too young for the next pass. A restart records it at start-up;
    // the first effective pass then comes 5 min later (the one at start-up fails: no stats yet).
    const spec = loadSpec(NODE);
    if (!spec) throw new Error('node spec missing');
    await restartKubelet(spec);
    const restartedAt = Date.now();
    const deadline = restartedAt + 6 * 60_000;
    let removed = false;
    while (!removed && Date.now() < deadline) {
      await sleep(2_000);
      removed = !nodeImages(NODE).includes(normalize(TEST_IMAGES.gcControl));
    }
    const log = readFileSync(logFile(`node-${NODE}-kubelet`), 'utf8');
    const gcLines = log.split('\n').filter((l) => /garbage collection|over the high threshold|Removing image|Image deleted/i.test(l));
    console.log(
      `image GC on ${NODE} ${((Date.now() - restartedAt) / 1000).toFixed(0)}s after the kubelet restart (${((Date.now() - readyAt) / 1000).toFixed(0)}s after Ready): control image ${removed ? 'removed' : 'still present'}\n${gcLines.slice(-6).join('\n')}`,
    );
    expect(removed, 'kubelet image GC removed the non-cached control image').toBe(true);
    const have = new Set(nodeImages(NODE));
    for (const ref of CACHED) expect(have.has(normalize(ref)), `${ref} survived GC`).toBe(true);
    await waitPoolPodRunning(pool, NODE);
    expect(containersUsing(NODE, CACHED).length).toBe(CACHED.length);
  });
});
