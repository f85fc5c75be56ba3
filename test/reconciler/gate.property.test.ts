/** Invariant of the gate over random pool reports and times (fast-check): it never stays shut past the absolute bound. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ABSOLUTE_GRACE_SECONDS } from '../../src/contract/gate-key.js';
import { decideGate } from '../../src/reconciler/gate.js';
import { T0, config, gate, node, pool, pools } from './fixtures.js';

describe('gate properties', () => {
  it('never keeps the gate past the absolute bound, whatever the pools report', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            state: fc.constantFrom(undefined, 'warm', 'partial', 'junk'),
            deadline: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined }),
          }),
          { maxLength: 5 },
        ),
        fc.constantFrom('warming' as const, 'warm' as const, 'partial' as const),
        fc.integer({ min: 0, max: 20_000 }),
        (others, own, now) => {
          const ps = pools(
            pool('gpu'),
            ...others.map((o, i) => pool(`p${i}`, o.deadline !== undefined ? { deadlineSeconds: o.deadline } : {})),
          );
          const labels = Object.fromEntries(others.flatMap((o, i) => (o.state ? [[`prewarm.dev/p${i}`, o.state]] : [])));
          const n = node({ labels, taints: [gate] });
          const g = decideGate(n, ps, config(), own, T0 + now * 1000);
          const longest = Math.max(600, ...others.map((o) => o.deadline ?? 600));
          if (now >= longest + ABSOLUTE_GRACE_SECONDS) expect(g.removeTaintKey).toBe(gate.key);
          const allReady = [own, ...others.map((o) => o.state)].every((x) => x === 'warm' || x === 'partial');
          expect(Boolean(g.removeTaintKey)).toBe(allReady || now >= longest + ABSOLUTE_GRACE_SECONDS);
        },
      ),
      { numRuns: 500 },
    );
  });
});
