import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseImageRef } from '../../src/oci/reference.js';
import { pullerLanes, type PullerLane } from '../../src/synth/lanes.js';

const ref = (i: number) => {
  const r = parseImageRef(`registry.example/team/image-${i}:v1`);
  if (!r.ok) throw new Error(r.error);
  return r.ref;
};
const images = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ref(from + i));
const canon = (lanes: readonly PullerLane[]) => lanes.map((l) => `${l.key}=${l.images.map((r) => r.canonical).join(',')}`);

describe('pullerLanes', () => {
  it('with one lane has no pullers: the holder alone', () => {
    expect(pullerLanes(images(7), 1)).toEqual([]);
  });

  it('puts every image on exactly one puller, never an empty one', () => {
    for (const [n, lanes] of [
      [50, 4],
      [3, 16],
      [16, 16],
      [15, 16],
    ] as const) {
      const all = images(n);
      const got = pullerLanes(all, lanes);
      expect(got.every((l) => l.images.length > 0)).toBe(true);
      expect(got.length).toBeLessThanOrEqual(lanes - 1);
      expect(
        got
          .flatMap((l) => l.images)
          .map((r) => r.canonical)
          .sort(),
      ).toEqual(all.map((r) => r.canonical).sort());
    }
  });

  it('gives a pool of at most L-1 images one puller per image, keyed by the image', () => {
    const got = pullerLanes(images(5), 6);
    expect(got.map((l) => l.images.length)).toEqual([1, 1, 1, 1, 1]);
    for (const l of got) expect(l.key).toMatch(/^[0-9a-f]{8}$/);
  });

  it('splits a larger pool over L-1 numbered lanes, within a factor of two of even for 200 images', () => {
    const got = pullerLanes(images(200), 5);
    expect(got.map((l) => l.key)).toEqual(['1', '2', '3', '4']);
    for (const l of got) expect(l.images.length).toBeGreaterThan(25);
    for (const l of got) expect(l.images.length).toBeLessThan(100);
  });

  it('changes at most one puller when one image is added or removed, on either side of the threshold', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 2, max: 16 }),
        fc.integer({ min: 0, max: 1000 }),
        (n, lanes, extra) => {
          // The one step across the threshold (L-1 -> L images) re-cuts every puller: tested below.
          fc.pre(n !== lanes - 1);
          const before = new Set(canon(pullerLanes(images(n), lanes)));
          const after = new Set(canon(pullerLanes([...images(n), ref(5000 + extra)], lanes)));
          const changed = [...after].filter((l) => !before.has(l)).length + [...before].filter((l) => !after.has(l)).length;
          // One puller replaced counts twice here (old and new template): at most one puller changes.
          expect(changed).toBeLessThanOrEqual(2);
        },
      ),
    );
  });

  it('re-cuts the pullers once when a pool grows past L-1 images', () => {
    for (const l of pullerLanes(images(3), 4)) expect(l.key).toMatch(/^[0-9a-f]{8}$/);
    for (const l of pullerLanes(images(4), 4)) expect(l.key).toMatch(/^[1-3]$/);
  });

  it('refuses a lane count that is not a positive integer', () => {
    expect(() => pullerLanes(images(1), 0)).toThrow('lanes must be a positive integer, got 0');
  });
});
