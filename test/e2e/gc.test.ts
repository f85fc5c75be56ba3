/**
 * E2E: kubelet image GC runs (deliberately low thresholds on this node) and the
 * pool's cached images survive while the pull pod runs, while a non-cached control image (on the
 * node, used by nothing) is removed.
 *
 * The kubelet runs image GC every 5 minutes (ImageGCPeriod, not configurable); its pass at
 * start-up always fails here ("invalid capacity 0 on image filesystem": stats not initialised
 * yet), so the first effective pass is ~5 min after the kubelet starts. An image is collected only
 * if the kubelet saw it before that pass began (a pass that first sees an image finds it younger
 * than the minimum age), so the node joins with every image of the test already in its containerd,
 * as a node image carries them: the kubelet sees them all at start-up, the pool's pod then runs on
 * the cached ones, and the pass 5 min later must tell them apart from the control image by use
 * alone. The wait is bounded: 7 min after the join began.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, removeNode } from '../../harness/cluster/cluster.js';
import { normalize, TEST_IMAGES } from '../../harness/cluster/images.js';
import { nodeImages } from '../../harness/cluster/node.js';
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
  let joinedAt = 0;

  beforeAll(async () => {
    const dir = specDir('gc', [imageCache('e2e-gc', 'gc', [{ pool: 'gc', nodeSelector: { [SEL]: 'yes' }, images: CACHED }])]);
    const { yaml } = synth([dir]);
    const objects = yamlObjects(yaml);
    prepareImages(objects);
    const p = poolsOf(objects).find((x) => x.namespace === 'e2e-gc');
    if (!p) throw new Error('no gc pool');
    pool = p;
    // Any usage above 1% of the image filesystem triggers GC down to 0%: everything unused goes.
    joinedAt = Date.now();
    ({ readyAt } = await addNode(NODE, {
      labels: { [SEL]: 'yes' },
      // 0s would be defaulted to 2m by the kubelet; 1s is the smallest age that is kept.
      imageGc: { highThresholdPercent: 1, lowThresholdPercent: 0, minimumGcAge: '1s' },
      verbosity: 2,
      preloadImages: [...CACHED, TEST_IMAGES.gcControl],
    }));
    expect(applyServerSide(yaml).warnings).toEqual([]);
  });

  afterAll(async () => {
    await removeNode(NODE).catch(() => undefined);
  });

  it('removes a non-cached image and keeps the cached ones while the pod runs', async () => {
    await waitImagesOnNode(NODE, CACHED, 180_000);
    await waitPoolPodRunning(pool, NODE);
    expect(nodeImages(NODE)).toContain(normalize(TEST_IMAGES.gcControl));
    const deadline = joinedAt + 7 * 60_000;
    let removed = false;
    while (!removed && Date.now() < deadline) {
      await sleep(2_000);
      removed = !nodeImages(NODE).includes(normalize(TEST_IMAGES.gcControl));
    }
    const log = readFileSync(logFile(`node-${NODE}-kubelet`), 'utf8');
    const gcLines = log.split('\n').filter((l) => /garbage collection|over the high threshold|Removing image|Image deleted/i.test(l));
    console.log(
      `image GC on ${NODE} ${((Date.now() - joinedAt) / 1000).toFixed(0)}s after the join began (${((Date.now() - readyAt) / 1000).toFixed(0)}s after Ready): control image ${removed ? 'removed' : 'still present'}\n${gcLines.slice(-6).join('\n')}`,
    );
    expect(removed, 'kubelet image GC removed the non-cached control image').toBe(true);
    const have = new Set(nodeImages(NODE));
    for (const ref of CACHED) expect(have.has(normalize(ref)), `${ref} survived GC`).toBe(true);
    await waitPoolPodRunning(pool, NODE);
    expect(containersUsing(NODE, CACHED).length).toBe(CACHED.length);
  });
});
