import { describe, expect, it } from 'vitest';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/contract/names.js';
import { ABSOLUTE_GRACE_SECONDS } from '../../src/contract/gate-key.js';
import { decideGate, mergeEvents, nextCheckAt } from '../../src/reconciler/gate.js';
import type { KNode } from '../../src/reconciler/kube-types.js';
import { taintRemovalPatch } from '../../src/reconciler/patches.js';
import { decidePool } from '../../src/reconciler/pool.js';
import { type JsonPatchOp } from '../../src/reconciler/ports.js';
import { ApiError } from '../../src/http/api-error.js';
import { EventReason } from '../../src/contract/events.js';
import { GateOutcome } from '../../src/reconciler/metrics.js';
import { mergeNodeMetadata, patchNodeTaints } from '../../harness/node-patch.js';
import { IMAGES, at, config, gate, node, observed as obs, pod, pool, pools, st } from './fixtures.js';

describe('decideGate', () => {
  const c = config();
  const cases: {
    name: string;
    node: KNode;
    pools: ReturnType<typeof pools>;
    own: 'warming' | 'warm' | 'partial';
    now: number;
    remove: boolean;
    outcome?: string;
    waiting?: string[];
    forceAt?: number;
  }[] = [
    {
      name: 'only pool warm → open',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu')),
      own: 'warm',
      now: at(60),
      remove: true,
      outcome: GateOutcome.Ready,
      waiting: [],
    },
    {
      name: 'only pool partial → open',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu')),
      own: 'partial',
      now: at(60),
      remove: true,
      outcome: GateOutcome.Ready,
      waiting: [],
    },
    {
      name: 'own still warming → wait for the absolute bound',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu')),
      own: 'warming',
      now: at(60),
      remove: false,
      waiting: ['gpu'],
      forceAt: at(600 + ABSOLUTE_GRACE_SECONDS),
    },
    {
      name: 'another selecting pool has no label yet → wait',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu'), pool('base')),
      own: 'warm',
      now: at(60),
      remove: false,
      waiting: ['base'],
      forceAt: at(600 + ABSOLUTE_GRACE_SECONDS),
    },
    {
      name: 'other pool partial → open',
      node: node({ taints: [gate], labels: { 'prewarm.dev/base': 'partial' } }),
      pools: pools(pool('gpu'), pool('base')),
      own: 'warm',
      now: at(60),
      remove: true,
      outcome: GateOutcome.Ready,
      waiting: [],
    },
    {
      name: 'other pool does not select the node (selector) → ignored',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu'), pool('arm', { nodeSelector: { arch: 'arm64' } })),
      own: 'warm',
      now: at(60),
      remove: true,
      outcome: GateOutcome.Ready,
      waiting: [],
    },
    {
      name: 'a passing not-ready:NoSchedule keeps no pool from gating (it gets its pod once the node is Ready) → wait',
      node: node({ taints: [gate, { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] }),
      pools: pools(pool('gpu'), pool('base')),
      own: 'warm',
      now: at(60),
      remove: false,
      waiting: ['base'],
      forceAt: at(600 + ABSOLUTE_GRACE_SECONDS),
    },
    {
      name: 'other pool does not tolerate a taint on the node → ignored',
      node: node({ taints: [gate, { key: 'dedicated', effect: 'NoSchedule' }] }),
      pools: pools(pool('gpu', { tolerations: [{ operator: 'Exists' }] }), pool('base')),
      own: 'warm',
      now: at(60),
      remove: true,
      outcome: GateOutcome.Ready,
      waiting: [],
    },
    {
      name: 'other pool gates another key → ignored',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu'), pool('x', { gateTaintKey: 'other/key' })),
      own: 'warm',
      now: at(60),
      remove: true,
      outcome: GateOutcome.Ready,
      waiting: [],
    },
    {
      name: 'non-gating pool → ignored',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu'), pool('x', { gateTaintKey: '' })),
      own: 'warm',
      now: at(60),
      remove: true,
      outcome: GateOutcome.Ready,
      waiting: [],
    },
    {
      name: 'a pool whose pod never starts: forced open at the absolute bound',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu'), pool('base')),
      own: 'warm',
      now: at(1200),
      remove: true,
      outcome: GateOutcome.Forced,
      waiting: ['base'],
    },
    {
      name: 'the absolute bound uses the longest deadline of the gating pools',
      node: node({ taints: [gate] }),
      pools: pools(pool('gpu'), pool('base', { deadlineSeconds: 1800 })),
      own: 'warm',
      now: at(1200),
      remove: false,
      forceAt: at(1800 + ABSOLUTE_GRACE_SECONDS),
      waiting: ['base'],
    },
    {
      name: 'the absolute bound counts from node creation even if Ready moved',
      node: node({ taints: [gate], readyAt: 5000 }),
      pools: pools(pool('gpu')),
      own: 'warming',
      now: at(1200),
      remove: true,
      outcome: GateOutcome.Forced,
      waiting: ['gpu'],
    },
  ];
  it.each(cases)('$name', (tc) => {
    const g = decideGate(tc.node, tc.pools, c, tc.own, tc.now);
    expect(g.removeTaintKey).toBe(tc.remove ? DEFAULT_GATE_TAINT_KEY : undefined);
    // Every field of the decision is compared: a case that leaves one out expects it absent.
    expect({ outcome: g.outcome, waitingFor: g.waitingFor, forceAt: g.forceAt }).toEqual({
      outcome: tc.outcome,
      waitingFor: tc.waiting,
      forceAt: tc.forceAt,
    });
  });

  it('does nothing when the pool does not gate or the taint is gone', () => {
    expect(decideGate(node({ taints: [gate] }), pools(pool('gpu')), config({ gateTaintKey: '' }), 'warm', at(60))).toEqual({
      waitingFor: [],
    });
    expect(decideGate(node({ taints: [] }), pools(pool('gpu')), c, 'warm', at(60))).toEqual({ waitingFor: [] });
  });
});

describe('events and timers', () => {
  it('merges the gate note into the pool transition Event: one Event per reconcile', () => {
    const ev = mergeEvents([{ reason: EventReason.Warm, message: 'pool gpu: warm' }], {
      removeTaintKey: 'k',
      outcome: GateOutcome.Ready,
      waitingFor: [],
    });
    expect(ev).toEqual([
      { reason: EventReason.Warm, message: 'pool gpu: warm; removed gate taint k: every pool selecting the node is warm or partial' },
    ]);
    expect(mergeEvents([], { removeTaintKey: 'k', outcome: GateOutcome.Forced, waitingFor: ['base'] })).toEqual([
      { reason: EventReason.GateForcedOpen, message: 'removed gate taint k at the absolute bound; pools not ready: base' },
    ]);
    expect(mergeEvents([], { waitingFor: ['x'] })).toEqual([]);
  });

  it('wakes at the deadline while warming and at the absolute bound while the gate waits', () => {
    const d = decidePool(obs());
    expect(nextCheckAt(d, { waitingFor: ['gpu'], forceAt: at(1200) })).toBe(at(610));
    const warm = decidePool(obs({ pod: pod(IMAGES, [st.running('c1', 'reg/a:1'), st.running('c2', 'reg/b:1')]) }));
    expect(nextCheckAt(warm, { waitingFor: ['base'], forceAt: at(1200) })).toBe(at(1200));
    expect(nextCheckAt(warm, { waitingFor: [] })).toBeUndefined();
  });
});

/**
 * Two sidecars of two pools on one node become warm at the same time. A tiny serializing node
 * store applies their writes in every possible order; the protocol (write own label, decide the
 * gate on the write's response, remove with a test-guarded JSON patch, re-read on conflict) must
 * always end with the taint removed, both labels set, and never remove a taint it should not.
 */
describe('race: several sidecars on one node', () => {
  class Store {
    constructor(public n: KNode) {}
    writes = 0;
    merge(labels: Record<string, string>): KNode {
      this.writes++;
      this.n = mergeNodeMetadata(this.n, { metadata: { labels } });
      return this.n;
    }
    jsonPatch(ops: readonly JsonPatchOp[]): KNode | 'conflict' {
      try {
        this.n = patchNodeTaints(this.n, ops);
      } catch (e) {
        if (e instanceof ApiError && e.code === 422) return 'conflict';
        throw e;
      }
      this.writes++;
      return this.n;
    }
  }
  const ps = pools(pool('a'), pool('b'));
  const cfg = (id: string) => config({ poolId: id, nodeLabelKey: `prewarm.dev/${id}`, nodeAnnotationKey: `status.prewarm.dev/${id}` });

  /** Runs sidecar `id`'s gate step on node `seen`; on conflict re-reads and decides again. */
  function gateStep(s: Store, id: string, seen: KNode): void {
    let view = seen;
    for (let i = 0; i < 3; i++) {
      const g = decideGate(view, ps, cfg(id), 'warm', at(60));
      if (!g.removeTaintKey) return;
      const patch = taintRemovalPatch(view, g.removeTaintKey);
      if (!patch) return;
      const r = s.jsonPatch(patch);
      if (r !== 'conflict') return;
      view = s.n;
    }
    throw new Error('did not converge');
  }

  const orders = [
    ['wa', 'wb', 'ga', 'gb'],
    ['wa', 'wb', 'gb', 'ga'],
    ['wa', 'ga', 'wb', 'gb'],
    ['wb', 'wa', 'ga', 'gb'],
    ['wb', 'gb', 'wa', 'ga'],
    ['wb', 'wa', 'gb', 'ga'],
  ];
  it.each(orders)('order %s %s %s %s', (...order) => {
    const s = new Store(node({ taints: [gate, { key: 'keep', effect: 'NoSchedule' }] }));
    const seen: Record<string, KNode> = {};
    for (const step of order) {
      const id = step[1] as string;
      if (step[0] === 'w') seen[id] = s.merge({ [`prewarm.dev/${id}`]: 'warm' });
      else gateStep(s, id, seen[id] as KNode);
    }
    expect(s.n.spec?.taints).toEqual([{ key: 'keep', effect: 'NoSchedule' }]);
    expect(s.n.metadata.labels).toEqual({ 'prewarm.dev/a': 'warm', 'prewarm.dev/b': 'warm' });
    // Two label writes plus exactly one successful taint removal.
    expect(s.writes).toBe(3);
  });

  it('a stale view cannot remove a taint that moved to another index', () => {
    const s = new Store(node({ taints: [{ key: 'x', effect: 'NoSchedule' }, gate] }));
    const stale = s.n;
    s.n = { ...s.n, spec: { taints: [gate] } }; // someone removed "x": the gate moved to index 0
    expect(s.jsonPatch(taintRemovalPatch(stale, DEFAULT_GATE_TAINT_KEY) ?? [])).toBe('conflict');
    expect(s.n.spec?.taints).toEqual([gate]);
  });
});
