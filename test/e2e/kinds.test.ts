/**
 * E2E: a scratch image (no shell) is cached; a private image behind basic
 * auth is pulled through imagePullSecrets; a nonexistent image leaves the pool's other images
 * cached and the failure visible in the pod status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { normalize, TEST_IMAGES } from '../../harness/cluster/images.js';
import { crictl, nodeImages } from '../../harness/cluster/node.js';
import { waitFor } from '../../harness/time.js';
import type { KubeObject } from '../../harness/kube.js';
import { type PoolImages, poolsOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import {
  applyServerSide,
  imageCache,
  poolPodOnNode,
  registryPullSecret,
  specDir,
  waitImagesOnNode,
  waitPoolPodRunning,
} from './helpers.js';

const NODE = 'kinds-node';
const SEL = 'e2e.prewarm.dev/kinds';
const GOOD = 'docker.io/e2e/good-app:1.0';

describe('image kinds: scratch, private, missing', () => {
  let objects: KubeObject[] = [];
  let pools: PoolImages[] = [];
  const pool = (ns: string): PoolImages => {
    const p = pools.find((x) => x.namespace === ns);
    if (!p) throw new Error(`no pool in ${ns}`);
    return p;
  };

  beforeAll(async () => {
    const dir = specDir('kinds', [
      imageCache('e2e-scratch', 'scratch', [{ pool: 'scratch', nodeSelector: { [SEL]: 'yes' }, images: [TEST_IMAGES.scratch] }]),
      imageCache('e2e-private', 'private', [{ pool: 'private', nodeSelector: { [SEL]: 'yes' }, images: [TEST_IMAGES.private] }], {
        imagePullSecrets: [{ name: 'regcred' }],
      }),
      imageCache('e2e-missing', 'missing', [{ pool: 'missing', nodeSelector: { [SEL]: 'yes' }, images: [GOOD, TEST_IMAGES.missing] }]),
    ]);
    const { yaml } = synth([dir]);
    objects = yamlObjects(yaml);
    pools = poolsOf(objects);
    prepareImages(objects, [TEST_IMAGES.missing]);
    await addNode(NODE, { labels: { [SEL]: 'yes' } });
  });

  afterAll(async () => {
    await removeNode(NODE).catch(() => undefined);
  });

  it('the private image really needs credentials', () => {
    const r = crictl(NODE, ['pull', TEST_IMAGES.private], true);
    expect(nodeImages(NODE)).not.toContain(normalize(TEST_IMAGES.private));
    expect(r).not.toContain('Image is up to date');
  });

  it('applies cleanly (namespaces first, then the pull secret, then the pools)', () => {
    const nsYaml = objects
      .filter((o) => o.kind === 'Namespace')
      .map((o) => JSON.stringify(o))
      .join('\n---\n');
    expect(applyServerSide(nsYaml).warnings).toEqual([]);
    const secret = registryPullSecret('e2e-private', 'regcred');
    expect(applyServerSide(JSON.stringify(secret)).warnings).toEqual([]);
    const applied = applyServerSide(objects.map((o) => JSON.stringify(o)).join('\n---\n'));
    expect(applied.warnings, applied.stderr).toEqual([]);
  });

  it('caches a scratch image (no shell, only a data file)', async () => {
    await waitImagesOnNode(NODE, [TEST_IMAGES.scratch], 180_000);
    const p = await waitPoolPodRunning(pool('e2e-scratch'), NODE);
    expect(p.containerStatuses.every((c) => c.ready)).toBe(true);
  });

  it('pulls a private image through imagePullSecrets', async () => {
    await waitImagesOnNode(NODE, [TEST_IMAGES.private], 180_000);
    await waitPoolPodRunning(pool('e2e-private'), NODE);
  });

  it('a nonexistent image leaves the other images cached and the failure visible', async () => {
    const p = pool('e2e-missing');
    await waitImagesOnNode(NODE, [GOOD], 180_000);
    const bad = await waitFor(
      'pull failure in pod status',
      () => {
        const pod = poolPodOnNode(p, NODE);
        const st = pod?.containerStatuses.find((c) => c.image === TEST_IMAGES.missing || c.image === normalize(TEST_IMAGES.missing));
        const waiting = st?.state['waiting'];
        return waiting && /ErrImagePull|ImagePullBackOff/.test(waiting.reason ?? '') ? { pod, waiting } : undefined;
      },
      180_000,
      1_000,
    );
    console.log(`missing image status: ${bad.waiting.reason}: ${bad.waiting.message ?? ''}`);
    expect(nodeImages(NODE)).toContain(normalize(GOOD));
    expect(nodeImages(NODE)).not.toContain(normalize(TEST_IMAGES.missing));
    // The good image's container runs.
    const good = bad.pod?.containerStatuses.find((c) => c.image === normalize(GOOD) || c.image === GOOD);
    expect(good?.state['running'], JSON.stringify(bad.pod?.containerStatuses)).toBeDefined();
    const events = kubectl([
      '-n',
      'e2e-missing',
      'get',
      'events',
      '--field-selector',
      'reason=Failed',
      '-o',
      'jsonpath={.items[*].message}',
    ]);
    expect(events).toContain('does-not-exist');
  });
});
