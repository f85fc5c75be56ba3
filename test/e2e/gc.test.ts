/**
 * E2E (issue #3, 5): kubelet image GC runs (deliberately low thresholds on this node) and the
 * pool's cached images survive while the pull pod runs, while a non-cached control image (pulled
 * on the node, used by nothing) is removed.
 *
 * The kubelet runs image GC every 5 minutes (ImageGCPeriod, not configurable); its pass at
 * start-up always fails here ("invalid capacity 0 on image filesystem": stats not initialised
 * yet), so the first effective pass is ~5 min after the kubelet starts. The test waits for it
 * (bounded: the later of 7 min after the node turned Ready and 6 min after the control pull).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, removeNode } from '../cluster/cluster.js';
import { TEST_IMAGES } from '../cluster/images.js';
import { crictl, nodeImages } from '../cluster/node.js';
import { logFile, sleep } from '../cluster/sh.js';
import { readFileSync } from 'node:fs';
import {
  applyServerSide, containersUsing, imageCache, normalize, parseObjects, poolsOf, prepareImages, specDir, synth,
  waitImagesOnNode, waitPoolPodRunning, type PoolImages,
} from './helpers.js';

const NODE = 'gc-node';
const SEL = 'e2e.prewarm.dev/gc';
const CACHED = ['docker.io/e2e/gc-cached-a:1.0', TEST_IMAGES.big];

describe('kubelet image GC', () => {
  let pool: PoolImages;
  let readyAt = 0;

  beforeAll(async () => {
    const dir = specDir('gc', [imageCache('e2e-gc', 'gc', [{ pool: 'gc', nodeSelector: { [SEL]: 'yes' }, images: CACHED }])]);
    const { yaml } = synth([dir]);
    const objects = parseObjects(yaml);
    prepareImages(objects);
    const p = poolsOf(objects).find((x) => x.namespace === 'e2e-gc');
    if (!p) throw new Error('no gc pool');
    pool = p;
    // Any usage above 1% of the image filesystem triggers GC down to 0%: everything unused goes.
    ({ readyAt } = await addNode(NODE, {
      labels: { [SEL]: 'yes' },
      imageGc: { highThresholdPercent: 1, lowThresholdPercent: 0, minimumGcAge: '0s' },
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
    const pulledAt = Date.now();
    expect(nodeImages(NODE)).toContain(normalize(TEST_IMAGES.gcControl));

    // GC passes come every 5 min from the kubelet's start; the first one after the pull is at most
    // 5 min away (the image must exist when the pass lists images), plus a minute of slack.
    const deadline = Math.max(readyAt + 7 * 60_000, pulledAt + 6 * 60_000);
    let removed = false;
    while (!removed && Date.now() < deadline) {
      await sleep(2_000);
      removed = !nodeImages(NODE).includes(normalize(TEST_IMAGES.gcControl));
    }
    const log = readFileSync(logFile(`node-${NODE}-kubelet`), 'utf8');
    const gcLines = log.split('\n').filter((l) => /garbage collection|over the high threshold|Removing image|Image deleted/i.test(l));
    console.log(`image GC on ${NODE} after ${((Date.now() - readyAt) / 1000).toFixed(0)}s: control image ${removed ? 'removed' : 'still present'}\n${gcLines.slice(-6).join('\n')}`);
    expect(removed, 'kubelet image GC removed the non-cached control image').toBe(true);
    const have = new Set(nodeImages(NODE));
    for (const ref of CACHED) expect(have.has(normalize(ref)), `${ref} survived GC`).toBe(true);
    await waitPoolPodRunning(pool, NODE);
    expect(containersUsing(NODE, CACHED).length).toBe(CACHED.length);
  });
});
