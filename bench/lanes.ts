/**
 * How even and how stable the lane split is (src/synth/lanes.ts), for pools of 1..40 images and
 * lanes 2..8: for each (N, L), SETS image sets of N images (default 30) and one image added to
 * each. Prints per lane count the widest spread of one split (max - min images per puller) and
 * the pullers changed by adding one image (removing it reads the same pair of splits backwards):
 * mean, median, 90th percentile and maximum, over all N and at the q steps (N+1 a multiple of
 * L, where floor(N / L) grows). Pure computation, no cluster.
 *
 * Usage: tsx bench/lanes.ts   (SETS=100 for more sets per size)
 */
import { parseImageRef } from '../src/oci/reference.js';
import { pullerLanes } from '../src/synth/lanes.js';
import { pullersChanged } from '../harness/lanes.js';

const ref = (name: string) => {
  const r = parseImageRef(`registry.example/team/${name}:v1`);
  if (!r.ok) throw new Error(r.error);
  return r.ref;
};

const quantile = (xs: readonly number[], p: number) => [...xs].sort((x, y) => x - y)[Math.floor(p * (xs.length - 1))] ?? 0;
const mean = (xs: readonly number[]) => (xs.reduce((x, y) => x + y, 0) / xs.length).toFixed(2);
const sets = Number(process.env.SETS ?? 30);

console.log('lanes pullers | spread-max | changed: mean p50 p90 max | at q steps: mean max');
for (let lanes = 2; lanes <= 8; lanes++) {
  const p = lanes;
  const all: number[] = [];
  const steps: number[] = [];
  let spread = 0;
  for (let n = 1; n <= 40; n++) {
    for (let s = 0; s < sets; s++) {
      const images = Array.from({ length: n }, (_, i) => ref(`s${s}-n${n}-i${i}`));
      const before = pullerLanes(images, lanes);
      const after = pullerLanes([...images, ref(`s${s}-n${n}-x`)], lanes);
      const sizes = before.map((l) => l.images.length);
      spread = Math.max(spread, Math.max(...sizes) - Math.min(...sizes));
      const c = pullersChanged(before, after);
      all.push(c);
      if ((n + 1) % p === 0) steps.push(c);
    }
  }
  console.log(
    `lanes-split L=${lanes} P=${p} | ${spread} | ${mean(all)} ${quantile(all, 0.5)} ${quantile(all, 0.9)} ${Math.max(...all)} | ${mean(steps)} ${Math.max(...steps)}`,
  );
}
