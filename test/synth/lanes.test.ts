import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseImageRef } from '../../src/imagecache/reference.js';
import { assignLanes, holderOrder } from '../../src/synth/lanes.js';

const ref = (i: number) => {
  const r = parseImageRef(`registry.example/team/image-${i}:v1`);
  if (!r.ok) throw new Error(r.error);
  return r.ref;
};
const images = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ref(from + i));

describe('assignLanes', () => {
  it('puts every image on exactly one lane', () => {
    const all = images(50);
    const lanes = assignLanes(all, 4);
    expect(lanes).toHaveLength(4);
    expect(
      lanes
        .flat()
        .map((r) => r.canonical)
        .sort(),
    ).toEqual(all.map((r) => r.canonical).sort());
  });

  it('with one lane is the holder alone, in the given order', () => {
    const all = images(7);
    expect(assignLanes(all, 1)).toEqual([all]);
  });

  it('spreads 200 images over 4 lanes within a factor of two of even', () => {
    const sizes = assignLanes(images(200), 4).map((l) => l.length);
    for (const s of sizes) expect(s).toBeGreaterThan(25);
    for (const s of sizes) expect(s).toBeLessThan(100);
  });

  it('moves no other image when one is added or removed (at most one puller changes)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 1000 }), (n, lanes, extra) => {
        const base = images(n);
        const added = [...base, ref(5000 + extra)];
        const before = assignLanes(base, lanes);
        const after = assignLanes(added, lanes);
        const changed = before.filter(
          (lane, i) => JSON.stringify(lane.map((r) => r.canonical)) !== JSON.stringify((after[i] ?? []).map((r) => r.canonical)),
        );
        expect(changed.length).toBeLessThanOrEqual(1);
      }),
    );
  });

  it('refuses a lane count that is not a positive integer', () => {
    expect(() => assignLanes(images(1), 0)).toThrow('lanes must be a positive integer, got 0');
  });
});

describe('holderOrder', () => {
  it('starts with the images no puller has, then the rest in their order', () => {
    const all = images(20);
    const lanes = assignLanes(all, 3);
    const order = holderOrder(all, lanes);
    expect(order.slice(0, lanes[0]?.length)).toEqual(lanes[0]);
    expect(order.map((r) => r.canonical).sort()).toEqual(all.map((r) => r.canonical).sort());
  });
});
