import { describe, expect, it } from 'vitest';
import { believedSize, matchImages, MAX_IMAGE_BYTES, podImages, podPinnedBytes } from '../../src/contract/node-images.js';
import type { Pod } from '../../src/contract/pod-status.js';

const ID = `sha256:${'a'.repeat(64)}`;

const pod: Pod = {
  spec: {
    initContainers: [{ name: 'init', image: 'reg/busybox:1' }],
    containers: [
      { name: 'c1', image: 'reg/a:1' },
      { name: 'c2', image: 'reg/a:1' },
      { name: 'c3', image: 'reg/b:1' },
    ],
  },
  status: {
    initContainerStatuses: [{ name: 'init', image: 'reg/busybox:1', imageID: `reg/busybox@${ID}` }],
    containerStatuses: [
      { name: 'c1', image: 'reg/a:1', imageID: `docker-pullable://reg/a@${ID}` },
      { name: 'c3', image: 'reg/b:1', imageID: '' },
    ],
  },
};

describe('podImages', () => {
  it('every image once, init containers too, with the names the node may list it by', () => {
    expect(podImages([pod])).toEqual([
      { ref: 'reg/a:1', names: ['reg/a:1', `reg/a@${ID}`], onNode: true },
      { ref: 'reg/b:1', names: ['reg/b:1'], onNode: false },
      { ref: 'reg/busybox:1', names: ['reg/busybox:1', `reg/busybox@${ID}`], onNode: true },
    ]);
  });

  it('one image across pods when `key` makes their names one', () => {
    const other: Pod = { spec: { containers: [{ name: 'c', image: 'REG/a:1' }] } };
    expect(podImages([pod, other], (i) => i.toLowerCase()).map((i) => i.ref)).toEqual(['reg/a:1', 'reg/b:1', 'reg/busybox:1']);
  });
});

describe('matchImages and podPinnedBytes', () => {
  it('counts an entry once though two names match it, and leaves out what the list does not show', () => {
    const list = [
      { names: ['reg/a:1', `reg/a@${ID}`], sizeBytes: 300 },
      { names: ['reg/busybox:1'], sizeBytes: 5 },
    ];
    const { listed, unlisted } = matchImages(podImages([pod]), list);
    expect([...listed]).toEqual([
      [0, 300],
      [1, 5],
    ]);
    expect(unlisted.map((i) => i.ref)).toEqual(['reg/b:1']);
    expect(podPinnedBytes(pod, list)).toEqual({ bytes: 305, complete: false });
    expect(podPinnedBytes(pod, [...list, { names: ['reg/b:1'], sizeBytes: 1 }])).toEqual({ bytes: 306, complete: true });
  });

  it('does not believe sizes no image has', () => {
    for (const v of [-1, 1.5, MAX_IMAGE_BYTES + 1, Number.NaN, '5', undefined]) expect(believedSize(v)).toBeUndefined();
    expect(believedSize(0)).toBe(0);
    expect(podPinnedBytes(pod, [{ names: ['reg/a:1'], sizeBytes: -5 }])).toEqual({ bytes: 0, complete: false });
  });
});
