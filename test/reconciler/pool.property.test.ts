/**
 * Invariants of the pool decision over random pods, nodes and times (fast-check):
 * - write only on change: applying a decision and deciding again writes nothing and emits nothing;
 * - restart idempotence: the decision depends only on observed state (same input, same output);
 * - the annotation always fits its cap and parses back;
 * - cleanup always removes what is ours and never touches other keys.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ANNOTATION_MAX_BYTES, parseAnnotation } from '../../src/contract/annotation.js';
import type { ContainerStatus } from '../../src/contract/pod-status.js';
import type { KNode } from '../../src/reconciler/kube-types.js';
import { metadataPatch } from '../../src/reconciler/patches.js';
import { decidePool, type Observed } from '../../src/reconciler/pool.js';
import { SIDECAR, T0, config, digest, gate, iso, node, pod, pool, pools } from './fixtures.js';

const statusArb = (name: string): fc.Arbitrary<ContainerStatus> =>
  fc.oneof(
    fc.constant<ContainerStatus>({ name, imageID: '', state: { waiting: { reason: 'ContainerCreating' } } }),
    fc
      .integer({ min: 0, max: 2000 })
      .map((s): ContainerStatus => ({ name, imageID: `r/x@${digest('a')}`, state: { running: { startedAt: iso(s) } } })),
    fc
      .constantFrom('ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'RegistryUnavailable')
      .chain((reason) =>
        fc.string({ maxLength: 300 }).map((message): ContainerStatus => ({ name, imageID: '', state: { waiting: { reason, message } } })),
      ),
    fc.integer({ min: 0, max: 2000 }).map((s): ContainerStatus => ({
      name,
      imageID: '',
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, startedAt: iso(s) } },
    })),
  );

const scenario = fc.integer({ min: 0, max: 30 }).chain((n) =>
  fc.record({
    images: fc.constant(Array.from({ length: n }, (_, i) => `registry.example/team/image-number-${i}:v${i}`)),
    statuses: fc.tuple(...Array.from({ length: n }, (_, i) => statusArb(`c${i + 1}`))),
    now: fc.integer({ min: 0, max: 3000 }),
    readyAt: fc.integer({ min: 0, max: 1000 }),
    otherLabels: fc.dictionary(fc.constantFrom('a', 'kubernetes.io/os', 'prewarm.dev/other'), fc.constantFrom('x', 'warm')),
  }),
);

function apply(n: KNode, patch: object | undefined): KNode {
  if (!patch) return n;
  const md = (patch as { metadata: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> } }).metadata;
  const merge = (cur: Record<string, string> | undefined, p: Record<string, string | null> | undefined): Record<string, string> => {
    const out = { ...(cur ?? {}) };
    for (const [k, v] of Object.entries(p ?? {})) {
      if (v === null) Reflect.deleteProperty(out, k);
      else out[k] = v;
    }
    return out;
  };
  return {
    ...n,
    metadata: { ...n.metadata, labels: merge(n.metadata.labels, md.labels), annotations: merge(n.metadata.annotations, md.annotations) },
  };
}

describe('pool decision properties', () => {
  it('writes only on change, is deterministic, and keeps the annotation bounded', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const o: Observed = {
          pod: pod(s.images, s.statuses),
          node: node({ labels: s.otherLabels, taints: [gate], readyAt: s.readyAt }),
          pools: pools(pool('gpu')),
          config: config(),
          now: T0 + s.now * 1000,
          sidecarName: SIDECAR,
        };
        const d1 = decidePool(o);
        expect(decidePool(o)).toEqual(d1);
        if (typeof d1.annotation === 'string') {
          expect(Buffer.byteLength(d1.annotation)).toBeLessThanOrEqual(ANNOTATION_MAX_BYTES);
          expect(parseAnnotation(d1.annotation)).toBeDefined();
        }
        const after = apply(o.node, metadataPatch(o.config, d1));
        const d2 = decidePool({ ...o, node: after });
        expect(d2.label).toBeUndefined();
        expect(d2.annotation).toBeUndefined();
        expect(d2.events).toEqual([]);
        expect(d2.timeToWarmSeconds).toBeUndefined();
        expect(d2.state).toBe(d1.state);
        // Other keys are never touched.
        for (const [k, v] of Object.entries(s.otherLabels)) expect(after.metadata.labels?.[k]).toBe(v);
        // Cleanup removes ours and only ours.
        const gone = apply(after, metadataPatch(o.config, decidePool({ ...o, node: after, terminating: true })));
        expect(gone.metadata.labels?.['prewarm.dev/gpu']).toBeUndefined();
        expect(gone.metadata.annotations?.['status.prewarm.dev/gpu']).toBeUndefined();
        expect(gone.metadata.labels).toEqual(s.otherLabels);
      }),
      { numRuns: 300 },
    );
  });
});
