import { describe, expect, it } from 'vitest';
import { parseAnnotation, renderAnnotation, type PoolAnnotation } from '../../src/contract/annotation.js';
import { metadataPatch } from '../../src/reconciler/patches.js';
import { decidePool } from '../../src/reconciler/pool.js';
import type { KNode } from '../../src/reconciler/kube-types.js';
import { EventReason } from '../../src/contract/events.js';
import { HELPER_CONTAINER } from '../../src/contract/names.js';
import { IMAGES, at, config, digest, gate, iso, node, observed as obs, pod, pullerPod, st } from './fixtures.js';

const ownAnn = (a: Partial<PoolAnnotation>): string => renderAnnotation({ v: 1, pod: 'pull-a-xyz', state: 'warming', images: 2, ...a });

describe('decidePool', () => {
  it('writes nothing while every image is still pulling', () => {
    const d = decidePool(obs());
    expect(d.state).toBe('warming');
    expect(d.label).toBeUndefined();
    expect(d.annotation).toBeUndefined();
    expect(d.events).toEqual([]);
    expect(d.deadlineAt).toBe(at(10 + 600));
  });

  it('marks warm when every image runs, with digests and time-to-warm from node Ready', () => {
    const d = decidePool(
      obs({ pod: pod(IMAGES, [st.running('c1', 'reg/a:1', 30, 'a'), st.running('c2', 'reg/b:1', 70, 'b')]), now: at(75) }),
    );
    expect(d.state).toBe('warm');
    expect(d.label).toBe('warm');
    expect(d.timeToWarmSeconds).toBe(60);
    const ann = parseAnnotation(d.annotation ?? undefined);
    expect(ann).toMatchObject({ state: 'warm', images: 2, ttwSeconds: 60, warmAt: iso(70), pod: 'pull-a-xyz' });
    expect(ann?.digests).toEqual({ 'reg/a:1': digest('a'), 'reg/b:1': digest('b') });
    expect(d.events).toEqual([{ reason: EventReason.Warm, message: 'pool gpu: all 2 images present, time to warm 60s' }]);
  });

  it('counts a container that crashed after the pull as present', () => {
    const d = decidePool(obs({ pod: pod(IMAGES, [st.running('c1', 'reg/a:1'), st.crashed('c2', 'reg/b:1', 40)]) }));
    expect(d.state).toBe('warm');
    expect(d.label).toBe('warm');
  });

  it('is a no-op when the node already shows our warm state (restart is idempotent)', () => {
    const first = decidePool(obs({ pod: pod(IMAGES, [st.running('c1', 'reg/a:1'), st.running('c2', 'reg/b:1')]) }));
    const n = node({
      taints: [],
      labels: { 'prewarm.dev/gpu': 'warm' },
      annotations: { 'status.prewarm.dev/gpu': first.annotation as string },
    });
    const again = decidePool(obs({ node: n, pod: pod(IMAGES, [st.running('c1', 'reg/a:1'), st.running('c2', 'reg/b:1')]), now: at(5000) }));
    expect(again).toMatchObject({ state: 'warm', events: [] });
    expect(again.label).toBeUndefined();
    expect(again.annotation).toBeUndefined();
    expect(again.timeToWarmSeconds).toBeUndefined();
  });

  it('stays warm, writing nothing, when the pullers that showed the images are gone and the holder still waits', () => {
    const first = decidePool(obs({ pod: pod(IMAGES, [st.running('c1', 'reg/a:1', 30, 'a'), st.running('c2', 'reg/b:1', 70, 'b')]) }));
    const n = node({
      taints: [],
      labels: { 'prewarm.dev/gpu': 'warm' },
      annotations: { 'status.prewarm.dev/gpu': first.annotation as string },
    });
    const later = decidePool(obs({ node: n, pod: pod(IMAGES, [st.running('c1', 'reg/a:1', 30, 'a'), st.creating('c2')]), now: at(5000) }));
    expect(later).toMatchObject({ state: 'warm', events: [] });
    expect(later.label).toBeUndefined();
    expect(later.annotation).toBeUndefined();
    // Not from another pod's warm annotation: that one is stale.
    const other = node({
      taints: [],
      labels: { 'prewarm.dev/gpu': 'warm' },
      annotations: { 'status.prewarm.dev/gpu': ownAnn({ pod: 'pull-a-old', state: 'warm', warmAt: iso(20), ttwSeconds: 10 }) },
    });
    expect(decidePool(obs({ node: other, pod: pod(IMAGES, [st.creating('c1'), st.creating('c2')]) })).state).toBe('warming');
  });

  it('reports pull failures while warming, once per failing set', () => {
    const p = pod(IMAGES, [st.running('c1', 'reg/a:1'), st.waiting('c2', 'ErrImagePull', 'manifest unknown')]);
    const d = decidePool(obs({ pod: p }));
    expect(d.state).toBe('warming');
    expect(d.label).toBeUndefined();
    expect(parseAnnotation(d.annotation ?? undefined)?.failing).toEqual([
      { image: 'reg/b:1', reason: 'ErrImagePull', message: 'manifest unknown' },
    ]);
    expect(d.events).toEqual([{ reason: EventReason.ImagePullFailing, message: 'pool gpu: reg/b:1: ErrImagePull (manifest unknown)' }]);

    // The kubelet flips to ImagePullBackOff: same failing set, same annotation, no Event.
    const n = node({ taints: [gate], annotations: { 'status.prewarm.dev/gpu': d.annotation as string } });
    const flip = decidePool(
      obs({ node: n, pod: pod(IMAGES, [st.running('c1', 'reg/a:1'), st.waiting('c2', 'ImagePullBackOff', 'Back-off pulling image')]) }),
    );
    expect(flip.annotation).toBeUndefined();
    expect(flip.events).toEqual([]);
  });

  it('fails open at the deadline: partial, naming failing and missing images with reasons', () => {
    const p = pod(
      ['reg/a:1', 'reg/b:1', 'reg/c:1'],
      [st.running('c1', 'reg/a:1'), st.waiting('c2', 'InvalidImageName', 'bad ref'), st.creating('c3')],
    );
    const d = decidePool(obs({ pod: p, now: at(610) }));
    expect(d.state).toBe('partial');
    expect(d.label).toBe('partial');
    const ann = parseAnnotation(d.annotation ?? undefined);
    expect(ann).toMatchObject({ state: 'partial', images: 3, present: 1 });
    expect(ann?.failing).toEqual([
      { image: 'reg/b:1', reason: 'InvalidImageName', message: 'bad ref' },
      { image: 'reg/c:1', reason: 'ContainerCreating' },
    ]);
    expect(d.events[0]?.reason).toBe(EventReason.Partial);
    expect(d.events[0]?.message).toBe(
      'pool gpu: deadline of 600s passed with 2 of 3 images missing: reg/b:1: InvalidImageName (bad ref); reg/c:1: ContainerCreating',
    );
  });

  it('keeps the failure it wrote for an image that now only waits (the puller that showed it left a partial node)', () => {
    const ann = ownAnn({
      state: 'partial',
      present: 1,
      failing: [{ image: 'reg/b:1', reason: 'ErrImagePull', message: 'manifest unknown' }],
    });
    const n = node({ labels: { 'prewarm.dev/gpu': 'partial' }, annotations: { 'status.prewarm.dev/gpu': ann } });
    const waitingHolder = pod(IMAGES, [st.running('c1', 'reg/a:1'), st.waiting('c2', 'PodInitializing', '')]);
    const d = decidePool(obs({ node: n, pod: waitingHolder, now: at(700) }));
    expect(d.state).toBe('partial');
    expect(parseAnnotation(d.annotation ?? ann)?.failing).toEqual([
      { image: 'reg/b:1', reason: 'ErrImagePull', message: 'manifest unknown' },
    ]);
    // A wait it never saw fail is written as the wait; a new failure replaces the old one.
    const fresh = decidePool(obs({ pod: waitingHolder, now: at(700) }));
    expect(parseAnnotation(fresh.annotation ?? undefined)?.failing).toEqual([{ image: 'reg/b:1', reason: 'PodInitializing' }]);
    const again = decidePool(
      obs({ node: n, pod: pod(IMAGES, [st.running('c1', 'reg/a:1'), st.waiting('c2', 'InvalidImageName', 'bad')]), now: at(700) }),
    );
    expect(parseAnnotation(again.annotation ?? undefined)?.failing).toEqual([
      { image: 'reg/b:1', reason: 'InvalidImageName', message: 'bad' },
    ]);
  });

  it('does not fail open one millisecond before the deadline', () => {
    const p = pod(IMAGES, [st.running('c1', 'reg/a:1'), st.creating('c2')]);
    expect(decidePool(obs({ pod: p, now: at(610) - 1 })).state).toBe('warming');
  });

  it('keeps partial sticky when Ready flapped and moved the deadline later', () => {
    const p = pod(IMAGES, [st.running('c1', 'reg/a:1'), st.creating('c2')]);
    const ann = ownAnn({ state: 'partial', present: 1 });
    const n = node({ readyAt: 900, labels: { 'prewarm.dev/gpu': 'partial' }, annotations: { 'status.prewarm.dev/gpu': ann } });
    const d = decidePool(obs({ pod: p, node: n, now: at(950) }));
    expect(d.state).toBe('partial');
    expect(d.events).toEqual([]);
  });

  it('goes from partial to warm when the last image arrives', () => {
    const n = node({ labels: { 'prewarm.dev/gpu': 'partial' }, annotations: { 'status.prewarm.dev/gpu': ownAnn({ state: 'partial' }) } });
    const d = decidePool(
      obs({ node: n, pod: pod(IMAGES, [st.running('c1', 'reg/a:1', 30), st.running('c2', 'reg/b:1', 900)]), now: at(901) }),
    );
    expect(d.label).toBe('warm');
    expect(d.events[0]?.reason).toBe(EventReason.Warm);
    expect(d.timeToWarmSeconds).toBe(890);
  });

  it('drops a warm label left by a previous pod until this pod has verified its images', () => {
    const stale = renderAnnotation({ v: 1, pod: 'pull-a-old', state: 'warm', images: 2, warmAt: iso(1), ttwSeconds: 1 });
    const n = node({ labels: { 'prewarm.dev/gpu': 'warm' }, annotations: { 'status.prewarm.dev/gpu': stale } });
    const d = decidePool(obs({ node: n }));
    expect(d.label).toBeNull();
    expect(d.annotation).toBeNull();
  });

  it.each([
    ['SIGTERM', { terminating: true }],
    ['deletionTimestamp', { pod: pod(IMAGES, [], { deleting: true }) }],
  ])('cleans up its label and annotation on %s', (_n, over) => {
    const n = node({
      labels: { 'prewarm.dev/gpu': 'warm', 'prewarm.dev/other': 'warm' },
      annotations: { 'status.prewarm.dev/gpu': ownAnn({ state: 'warm' }) },
    });
    const d = decidePool(obs({ node: n, ...over }));
    expect(d.state).toBe('terminating');
    expect(d.label).toBeNull();
    expect(d.annotation).toBeNull();
    expect(metadataPatch(config(), d)).toEqual({
      metadata: { labels: { 'prewarm.dev/gpu': null }, annotations: { 'status.prewarm.dev/gpu': null } },
    });
  });

  it('ignores an annotation written by someone else or not valid JSON, and rewrites it', () => {
    const p = pod(IMAGES, [st.running('c1', 'reg/a:1'), st.running('c2', 'reg/b:1')]);
    const foreign = [
      '{not json',
      'null',
      '"warm"',
      JSON.stringify({ owner: 'some-other-tool', state: 'warm' }),
      // Our own pod's name, but a field of the wrong type: a hand edit must not crash the sidecar.
      JSON.stringify({ v: 1, pod: 'pull-a-xyz', state: 'partial', images: 2, failing: 'reg/b:1' }),
      JSON.stringify({ v: 1, pod: 'pull-a-xyz', state: 'warm', images: 2, warmAt: 'soon', ttwSeconds: 1 }),
      // Another pod's (a previous incarnation's): stale, recomputed from scratch.
      ownAnn({ pod: 'pull-a-old', state: 'partial', present: 1 }),
    ];
    for (const text of foreign) {
      const n = node({ taints: [gate], labels: { 'prewarm.dev/gpu': 'warm' }, annotations: { 'status.prewarm.dev/gpu': text } });
      const d = decidePool(obs({ node: n, pod: p, now: at(75) }));
      expect(d.state, text).toBe('warm');
      expect(parseAnnotation(d.annotation ?? undefined), text).toMatchObject({ pod: 'pull-a-xyz', state: 'warm', images: 2 });
      // Not sticky partial from someone else's annotation, and the Warm transition is announced once.
      expect(
        d.events.map((e) => e.reason),
        text,
      ).toEqual([EventReason.Warm]);
    }
    // While warming, a malformed annotation is removed (we have nothing to say yet), never kept.
    const warming = decidePool(obs({ node: node({ taints: [gate], annotations: { 'status.prewarm.dev/gpu': '{"v":1' } }) }));
    expect(warming).toMatchObject({ state: 'warming', annotation: null });
  });

  it('writes nothing on cleanup when nothing of ours is on the node', () => {
    const d = decidePool(obs({ terminating: true, node: node({ labels: { 'prewarm.dev/other': 'warm' } }) }));
    expect(metadataPatch(config(), d)).toBeUndefined();
  });

  it('reports an unpullable init container as blocking every image', () => {
    const p = pod(IMAGES, [st.waiting('c1', 'PodInitializing'), st.waiting('c2', 'PodInitializing')], {
      initStatuses: [st.waiting(HELPER_CONTAINER, 'ErrImagePull', 'denied')],
    });
    const d = decidePool(obs({ pod: p, now: at(700) }));
    expect(d.state).toBe('partial');
    expect(parseAnnotation(d.annotation ?? undefined)?.failing?.map((f) => f.image)).toEqual(['reg/a:1', 'reg/b:1', 'reg/busybox:1']);
  });

  it('is warm at once for a pool without images', () => {
    expect(decidePool(obs({ pod: pod([], []) })).label).toBe('warm');
  });

  it('counts the deadline from pod creation when the pool is new on an old node', () => {
    const d = decidePool(obs({ pod: pod(IMAGES, [st.creating('c1'), st.creating('c2')], { createdAt: 5000 }), now: at(5100) }));
    expect(d.state).toBe('warming');
    expect(d.deadlineAt).toBe(at(5600));
  });
});

describe('decidePool: whether the holder image containers may start (releaseImages)', () => {
  const waiting = pod(IMAGES, [st.creating('c1'), st.creating('c2')]);
  const pending = (name: string, images: string[], over: { deleting?: boolean } = {}) =>
    pullerPod(
      name,
      images,
      images.map((_, i) => st.creating(`c${i + 1}`)),
      over,
    );
  const listing = (n: KNode, names: string[][]): KNode => ({
    ...n,
    status: { ...n.status, images: names.map((ns) => ({ names: ns, sizeBytes: 1 })) },
  });
  const release = (over: Parameters<typeof obs>[0]) => decidePool(obs({ pod: waiting, ...over })).releaseImages;

  it.each([
    ['one puller holds every missing image', [pending('p1', IMAGES)]],
    ['two lanes hold one image each', [pending('p1', ['reg/a:1']), pending('p2', ['reg/b:1'])]],
    [
      'a lane already started its image, the other still pulls',
      [pullerPod('p1', ['reg/a:1'], [st.running('c1', 'reg/a:1')]), pending('p2', ['reg/b:1'])],
    ],
  ])('holds them while warming and %s', (_, peers) => {
    expect(release({ peers })).toBe(false);
  });

  it.each([
    ['no puller is on the node', []],
    ['the only puller of an image is being deleted', [pending('p1', ['reg/a:1']), pending('p2', ['reg/b:1'], { deleting: true })]],
    ['the only puller of an image failed', [pending('p1', ['reg/a:1']), { ...pending('p2', ['reg/b:1']), status: { phase: 'Failed' } }]],
    ['no puller holds one of the images (a puller of an older template)', [pending('p1', ['reg/a:1', 'reg/old:1'])]],
    [
      'a lane fails its pull (the holder shows the reason itself)',
      [pending('p1', ['reg/a:1']), pullerPod('p2', ['reg/b:1'], [st.waiting('c1', 'ErrImagePull')])],
    ],
    [
      "a lane's helper init container cannot be pulled",
      [
        pending('p1', ['reg/a:1']),
        {
          ...pending('p2', ['reg/b:1']),
          status: { phase: 'Pending', initContainerStatuses: [st.waiting(HELPER_CONTAINER, 'ImagePullBackOff')] },
        },
      ],
    ],
  ])('releases them while warming when %s: the holder pulls itself', (_, peers) => {
    expect(release({ peers })).toBe(true);
  });

  it('releases them once warm, once partial, and when the pod is going', () => {
    const done = pullerPod('p1', IMAGES, [st.running('c1', 'reg/a:1', 30, 'a'), st.running('c2', 'reg/b:1', 40, 'b')]);
    expect(decidePool(obs({ pod: waiting, peers: [done] }))).toMatchObject({ state: 'warm', releaseImages: true });
    expect(decidePool(obs({ pod: waiting, peers: [pending('p1', IMAGES)], now: at(700) }))).toMatchObject({
      state: 'partial',
      releaseImages: true,
    });
    expect(decidePool(obs({ pod: waiting, peers: [pending('p1', IMAGES)], terminating: true }))).toMatchObject({
      state: 'terminating',
      releaseImages: true,
    });
  });

  it('releases them when the kubelet already started one of them (the sidecar restarted beside them)', () => {
    const holder = pod(IMAGES, [st.running('c1', 'reg/a:1'), st.creating('c2')]);
    expect(decidePool(obs({ pod: holder, peers: [pending('p1', IMAGES)] }))).toMatchObject({ state: 'warming', releaseImages: true });
  });

  it('releases them when the node lists every missing image (a rollout on a warm node), by tag or by digest', () => {
    const peers = [pending('p1', IMAGES)];
    expect(release({ peers, node: listing(node({ taints: [gate] }), [['reg/a:1', 'reg/a@sha256:1'], ['reg/b:1']]) })).toBe(true);
    expect(release({ peers, node: listing(node({ taints: [gate] }), [['reg/a:1']]) })).toBe(false);
    const pinned = ['reg/a:1@sha256:' + 'a'.repeat(64), 'host:5000/b:2@sha256:' + 'b'.repeat(64)];
    const byDigest = pod(pinned, [st.creating('c1'), st.creating('c2')]);
    const listed = listing(node({ taints: [gate] }), [['reg/a@sha256:' + 'a'.repeat(64)], ['host:5000/b@sha256:' + 'b'.repeat(64)]]);
    expect(decidePool(obs({ pod: byDigest, peers: [pending('p1', pinned)], node: listed })).releaseImages).toBe(true);
    expect(decidePool(obs({ pod: byDigest, peers: [pending('p1', pinned)] })).releaseImages).toBe(false);
  });
});
