/** Measuring a pool's lane split, for its tests and bench:lanes alike. */
import type { PullerLane } from '../src/synth/lanes.js';

/** How many pullers differ between two splits of a pool: a puller whose images change rolls (or appears, or goes). */
export function pullersChanged(before: readonly PullerLane[], after: readonly PullerLane[]): number {
  const text = (lanes: readonly PullerLane[]) =>
    new Map(
      lanes.map((l) => [
        l.key,
        l.images
          .map((r) => r.canonical)
          .sort()
          .join(','),
      ]),
    );
  const a = text(before);
  const b = text(after);
  return [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).length;
}
