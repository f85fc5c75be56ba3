/**
 * How even and how stable the lane split is (src/synth/lanes.ts), for pools of 1..40 images and
 * lanes 2..8: for each (N, L), SETS image sets of N images (default 30) and one image added to
 * each. Prints per lane count the widest spread of one split (max - min images per puller) and
 * the pullers changed by adding one image (removing it reads the same pair of splits backwards):
 * mean, median, 90th percentile and maximum, over all N and at the q steps (N+1 a multiple of
 * L, where floor(N / L) grows). Pure computation, no cluster.
 *
 * Then the same for the byte split (sizes from the lock file): see the second table's comment.
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

// The byte split (pools whose sizes the lock file records): the same pools, each image given a
// size drawn log-uniformly from 1 MiB to 16 GiB by a seeded generator. Prints per lane count the
// pullers changed by adding one image (of a random size, and of a size below every other), the
// largest puller against the best any split can do (exact, by search, for N <= 10; elsewhere the
// lower bound max(largest image, total / P)), and the count split's largest puller on the same
// sizes.
const rand = (() => {
  let s = 0x2545f491;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
})();
const drawSize = () => Math.round(2 ** (20 + rand() * 14));

/** The least possible largest load of `sizes` over `p` pullers: branch and bound (small N only). */
function optimum(sizes: readonly number[], p: number): number {
  const xs = [...sizes].sort((a, b) => b - a);
  const loads = Array<number>(p).fill(0);
  let best = Infinity;
  const go = (i: number, worst: number): void => {
    if (worst >= best) return;
    if (i === xs.length) {
      best = worst;
      return;
    }
    const seen = new Set<number>();
    for (let l = 0; l < p; l++) {
      if (seen.has(loads[l] as number)) continue; // equal loads are the same choice
      seen.add(loads[l] as number);
      loads[l] = (loads[l] as number) + (xs[i] as number);
      go(i + 1, Math.max(worst, loads[l] as number));
      loads[l] = (loads[l] as number) - (xs[i] as number);
    }
  };
  go(0, 0);
  return best;
}

const maxLoad = (lanes: ReturnType<typeof pullerLanes>, bytes: ReadonlyMap<string, number>) =>
  Math.max(...lanes.map((l) => l.images.reduce((n, i) => n + (bytes.get(i.canonical) ?? 0), 0)));

console.log('');
console.log(
  'bytes L | changed +random: mean p50 p90 max | +smallest: max | largest/optimum (N<=10): mean max | largest/bound (all N): mean max | count/bytes: mean max',
);
for (let lanes = 2; lanes <= 8; lanes++) {
  const changed: number[] = [];
  const smallest: number[] = [];
  const vsOpt: number[] = [];
  const vsBound: number[] = [];
  const vsCount: number[] = [];
  for (let n = 1; n <= 40; n++) {
    for (let s = 0; s < sets; s++) {
      const images = Array.from({ length: n }, (_, i) => ref(`b${s}-n${n}-i${i}`));
      const bytes = new Map(images.map((i) => [i.canonical, drawSize()]));
      const extra = ref(`b${s}-n${n}-x`);
      const before = pullerLanes(images, lanes, bytes);
      changed.push(pullersChanged(before, pullerLanes([...images, extra], lanes, new Map([...bytes, [extra.canonical, drawSize()]]))));
      smallest.push(pullersChanged(before, pullerLanes([...images, extra], lanes, new Map([...bytes, [extra.canonical, 0]]))));
      const largest = maxLoad(before, bytes);
      const sizes = [...bytes.values()];
      const p = Math.min(lanes, n);
      vsBound.push(largest / Math.max(Math.max(...sizes), sizes.reduce((a, b) => a + b, 0) / p));
      if (n <= 10) vsOpt.push(largest / optimum(sizes, p));
      vsCount.push(maxLoad(pullerLanes(images, lanes), bytes) / largest);
    }
  }
  const r = (xs: readonly number[]) => `${mean(xs)} ${Math.max(...xs).toFixed(2)}`;
  console.log(
    `bytes L=${lanes} | ${mean(changed)} ${quantile(changed, 0.5)} ${quantile(changed, 0.9)} ${Math.max(...changed)} | ${Math.max(...smallest)} | ${r(vsOpt)} | ${r(vsBound)} | ${r(vsCount)}`,
  );
}
