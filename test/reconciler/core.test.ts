import { describe, expect, it } from 'vitest';
import {
  ABSOLUTE_GRACE_SECONDS,
  ANNOTATION_MAX_BYTES,
  classifyContainer,
  decideGate,
  decidePool,
  mergeEvents,
  metadataPatch,
  nextCheckAt,
  parseAnnotation,
  renderAnnotation,
  taintRemovalPatch,
  type Observed,
  type PoolAnnotation,
} from '../../src/reconciler/core.js';
import type { KNode, KTaint } from '../../src/reconciler/kube-types.js';
import { EventReason, GateOutcome } from '../../src/reconciler/reasons.js';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/wellknown.js';
import { SIDECAR, T0, config, digest, gate, iso, node, pod, pool, pools, st } from './fixtures.js';

const IMAGES = ['reg/a:1', 'reg/b:1'];
const at = (sec: number): number => T0 + sec * 1000;

function obs(over: Partial<Observed> = {}): Observed {
  return {
    pod: pod(IMAGES, [st.creating('c1'), st.creating('c2')]),
    node: node({ taints: [gate] }),
    pools: pools(pool('gpu')),
    config: config(),
    now: at(60),
    sidecarName: SIDECAR,
    ...over,
  };
}

const ownAnn = (a: Partial<PoolAnnotation>): string => renderAnnotation({ v: 1, pod: 'pull-a-xyz', state: 'warming', images: 2, ...a });

describe('classifyContainer', () => {
  const cases: [string, Parameters<typeof classifyContainer>[1], string, string?][] = [
    ['no status yet', undefined, 'pending'],
    ['creating', st.creating('c1'), 'pending', 'ContainerCreating'],
    ['running', st.running('c1', 'reg/a:1'), 'present'],
    ['completed', st.terminated('c1'), 'present'],
    ['crash after pull (CrashLoopBackOff with lastState)', st.crashed('c1', 'reg/a:1'), 'present'],
    ['CreateContainerConfigError comes after the pull', st.waiting('c1', 'CreateContainerConfigError'), 'present'],
    ['CreateContainerError comes after the pull', st.waiting('c1', 'CreateContainerError'), 'present'],
    ['imageID set while waiting', { name: 'c1', imageID: `reg/a@${digest('e')}`, state: { waiting: { reason: 'ContainerCreating' } } }, 'present'],
    ['back-off re-pull after it ran once', { name: 'c1', imageID: '', state: { waiting: { reason: 'ImagePullBackOff' } }, lastState: { terminated: { exitCode: 137, startedAt: iso(5) } } }, 'present'],
    ['ErrImagePull', st.waiting('c1', 'ErrImagePull'), 'failing', 'ErrImagePull'],
    ['ImagePullBackOff', st.waiting('c1', 'ImagePullBackOff'), 'failing', 'ImagePullBackOff'],
    ['InvalidImageName', st.waiting('c1', 'InvalidImageName'), 'failing', 'InvalidImageName'],
    ['ErrImageNeverPull', st.waiting('c1', 'ErrImageNeverPull'), 'failing', 'ErrImageNeverPull'],
    ['RegistryUnavailable', st.waiting('c1', 'RegistryUnavailable'), 'failing', 'RegistryUnavailable'],
    ['SignatureValidationFailed', st.waiting('c1', 'SignatureValidationFailed'), 'failing', 'SignatureValidationFailed'],
  ];
  it.each(cases)('%s', (_name, status, phase, reason) => {
    const o = classifyContainer('reg/a:1', status);
    expect(o.phase).toBe(phase);
    if (reason) expect(o.reason).toBe(reason);
  });

  it('takes the digest from imageID and the start time from the state', () => {
    const o = classifyContainer('reg/a:1', st.running('c1', 'reg/a:1', 33, 'f'));
    expect(o.digest).toBe(digest('f'));
    expect(o.presentSince).toBe(at(33));
  });

  it('cuts long kubelet messages', () => {
    const o = classifyContainer('reg/a:1', st.waiting('c1', 'ErrImagePull', 'x'.repeat(5000)));
    expect(o.message?.length).toBe(200);
  });
});

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
    const d = decidePool(obs({ pod: pod(IMAGES, [st.running('c1', 'reg/a:1', 30, 'a'), st.running('c2', 'reg/b:1', 70, 'b')]), now: at(75) }));
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
    const n = node({ taints: [], labels: { 'prewarm.dev/gpu': 'warm' }, annotations: { 'status.prewarm.dev/gpu': first.annotation as string } });
    const again = decidePool(obs({ node: n, pod: pod(IMAGES, [st.running('c1', 'reg/a:1'), st.running('c2', 'reg/b:1')]), now: at(5000) }));
    expect(again).toMatchObject({ state: 'warm', events: [] });
    expect(again.label).toBeUndefined();
    expect(again.annotation).toBeUndefined();
    expect(again.timeToWarmSeconds).toBeUndefined();
  });

  it('reports pull failures while warming, once per failing set', () => {
    const p = pod(IMAGES, [st.running('c1', 'reg/a:1'), st.waiting('c2', 'ErrImagePull', 'manifest unknown')]);
    const d = decidePool(obs({ pod: p }));
    expect(d.state).toBe('warming');
    expect(d.label).toBeUndefined();
    expect(parseAnnotation(d.annotation ?? undefined)?.failing).toEqual([{ image: 'reg/b:1', reason: 'ErrImagePull', message: 'manifest unknown' }]);
    expect(d.events).toEqual([{ reason: EventReason.ImagePullFailing, message: 'pool gpu: reg/b:1: ErrImagePull (manifest unknown)' }]);

    // The kubelet flips to ImagePullBackOff: same failing set, same annotation, no Event.
    const n = node({ taints: [gate], annotations: { 'status.prewarm.dev/gpu': d.annotation as string } });
    const flip = decidePool(obs({ node: n, pod: pod(IMAGES, [st.running('c1', 'reg/a:1'), st.waiting('c2', 'ImagePullBackOff', 'Back-off pulling image')]) }));
    expect(flip.annotation).toBeUndefined();
    expect(flip.events).toEqual([]);
  });

  it('fails open at the deadline: partial, naming failing and missing images with reasons', () => {
    const p = pod(['reg/a:1', 'reg/b:1', 'reg/c:1'], [st.running('c1', 'reg/a:1'), st.waiting('c2', 'InvalidImageName', 'bad ref'), st.creating('c3')]);
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
    expect(d.events[0]?.message).toBe('pool gpu: deadline of 600s passed with 2 of 3 images missing: reg/b:1: InvalidImageName (bad ref); reg/c:1: ContainerCreating');
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
    const d = decidePool(obs({ node: n, pod: pod(IMAGES, [st.running('c1', 'reg/a:1', 30), st.running('c2', 'reg/b:1', 900)]), now: at(901) }));
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
    const n = node({ labels: { 'prewarm.dev/gpu': 'warm', 'prewarm.dev/other': 'warm' }, annotations: { 'status.prewarm.dev/gpu': ownAnn({ state: 'warm' }) } });
    const d = decidePool(obs({ node: n, ...over }));
    expect(d.state).toBe('terminating');
    expect(d.label).toBeNull();
    expect(d.annotation).toBeNull();
    expect(metadataPatch(config(), d)).toEqual({ metadata: { labels: { 'prewarm.dev/gpu': null }, annotations: { 'status.prewarm.dev/gpu': null } } });
  });

  it('writes nothing on cleanup when nothing of ours is on the node', () => {
    const d = decidePool(obs({ terminating: true, node: node({ labels: { 'prewarm.dev/other': 'warm' } }) }));
    expect(metadataPatch(config(), d)).toBeUndefined();
  });

  it('reports an unpullable init container as blocking every image', () => {
    const p = pod(IMAGES, [st.waiting('c1', 'PodInitializing'), st.waiting('c2', 'PodInitializing')], { initStatuses: [st.waiting('prewarm-init', 'ErrImagePull', 'denied')] });
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

describe('renderAnnotation', () => {
  it('stays under the size cap for hundreds of images, counting what it omits', () => {
    const digests = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`registry.example/team/very/long/repository/name-${i}:v1.2.3`, digest('a')]));
    const failing = Array.from({ length: 40 }, (_, i) => ({ image: `reg/f${i}:1`, reason: 'ErrImagePull', message: 'm'.repeat(200) }));
    const text = renderAnnotation({ v: 1, pod: 'p', state: 'partial', images: 340, present: 300, digests, failing });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(ANNOTATION_MAX_BYTES);
    const a = parseAnnotation(text);
    expect(a?.digestsOmitted).toBeGreaterThan(0);
    expect((a?.failing?.length ?? 0) + (a?.failingOmitted ?? 0)).toBe(40);
    expect(a?.failing?.length).toBeLessThanOrEqual(10);
  });

  it('is deterministic: equal content, equal text', () => {
    const a = renderAnnotation({ v: 1, pod: 'p', state: 'warm', images: 2, digests: { b: 'x', a: 'y' } });
    const b = renderAnnotation({ v: 1, pod: 'p', state: 'warm', images: 2, digests: { a: 'y', b: 'x' } });
    expect(a).toBe(b);
  });

  it('treats unreadable annotations as absent', () => {
    expect(parseAnnotation('{nope')).toBeUndefined();
    expect(parseAnnotation('{"v":99,"pod":"p"}')).toBeUndefined();
    expect(parseAnnotation(undefined)).toBeUndefined();
  });
});

describe('decideGate', () => {
  const c = config();
  const cases: { name: string; node: KNode; pools: ReturnType<typeof pools>; own: 'warming' | 'warm' | 'partial'; now: number; remove: boolean; outcome?: string; waiting?: string[]; forceAt?: number }[] = [
    { name: 'only pool warm → open', node: node({ taints: [gate] }), pools: pools(pool('gpu')), own: 'warm', now: at(60), remove: true, outcome: GateOutcome.Ready, waiting: [] },
    { name: 'only pool partial → open', node: node({ taints: [gate] }), pools: pools(pool('gpu')), own: 'partial', now: at(60), remove: true, outcome: GateOutcome.Ready },
    { name: 'own still warming → wait for the absolute bound', node: node({ taints: [gate] }), pools: pools(pool('gpu')), own: 'warming', now: at(60), remove: false, waiting: ['gpu'], forceAt: at(600 + ABSOLUTE_GRACE_SECONDS) },
    { name: 'another selecting pool has no label yet → wait', node: node({ taints: [gate] }), pools: pools(pool('gpu'), pool('base')), own: 'warm', now: at(60), remove: false, waiting: ['base'] },
    { name: 'other pool partial → open', node: node({ taints: [gate], labels: { 'prewarm.dev/base': 'partial' } }), pools: pools(pool('gpu'), pool('base')), own: 'warm', now: at(60), remove: true, outcome: GateOutcome.Ready },
    { name: 'other pool does not select the node (selector) → ignored', node: node({ taints: [gate] }), pools: pools(pool('gpu'), pool('arm', { nodeSelector: { arch: 'arm64' } })), own: 'warm', now: at(60), remove: true },
    { name: 'other pool does not tolerate a taint on the node → ignored', node: node({ taints: [gate, { key: 'dedicated', effect: 'NoSchedule' }] }), pools: pools(pool('gpu', { tolerations: [{ operator: 'Exists' }] }), pool('base')), own: 'warm', now: at(60), remove: true },
    { name: 'other pool gates another key → ignored', node: node({ taints: [gate] }), pools: pools(pool('gpu'), pool('x', { gateTaintKey: 'other/key' })), own: 'warm', now: at(60), remove: true },
    { name: 'non-gating pool → ignored', node: node({ taints: [gate] }), pools: pools(pool('gpu'), pool('x', { gateTaintKey: '' })), own: 'warm', now: at(60), remove: true },
    { name: 'a pool whose pod never starts: forced open at the absolute bound', node: node({ taints: [gate] }), pools: pools(pool('gpu'), pool('base')), own: 'warm', now: at(1200), remove: true, outcome: GateOutcome.Forced, waiting: ['base'] },
    { name: 'the absolute bound uses the longest deadline of the gating pools', node: node({ taints: [gate] }), pools: pools(pool('gpu'), pool('base', { deadlineSeconds: 1800 })), own: 'warm', now: at(1200), remove: false, forceAt: at(1800 + ABSOLUTE_GRACE_SECONDS) },
    { name: 'the absolute bound counts from node creation even if Ready moved', node: node({ taints: [gate], readyAt: 5000 }), pools: pools(pool('gpu')), own: 'warming', now: at(1200), remove: true, outcome: GateOutcome.Forced, waiting: ['gpu'] },
  ];
  it.each(cases)('$name', (tc) => {
    const g = decideGate(tc.node, tc.pools, c, tc.own, tc.now);
    expect(g.removeTaintKey).toBe(tc.remove ? DEFAULT_GATE_TAINT_KEY : undefined);
    if (tc.outcome) expect(g.outcome).toBe(tc.outcome);
    if (tc.waiting) expect(g.waitingFor).toEqual(tc.waiting);
    if (tc.forceAt !== undefined) expect(g.forceAt).toBe(tc.forceAt);
  });

  it('does nothing when the pool does not gate or the taint is gone', () => {
    expect(decideGate(node({ taints: [gate] }), pools(pool('gpu')), config({ gateTaintKey: '' }), 'warm', at(60))).toEqual({ waitingFor: [] });
    expect(decideGate(node({ taints: [] }), pools(pool('gpu')), c, 'warm', at(60))).toEqual({ waitingFor: [] });
  });
});

describe('taint removal patch', () => {
  it('removes every taint with the key, guarded by tests, highest index first', () => {
    const other: KTaint = { key: 'x', effect: 'NoSchedule' };
    const ne: KTaint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoExecute', timeAdded: iso(1) };
    expect(taintRemovalPatch(node({ taints: [gate, other, ne] }), DEFAULT_GATE_TAINT_KEY)).toEqual([
      { op: 'test', path: '/spec/taints/2', value: ne },
      { op: 'remove', path: '/spec/taints/2' },
      { op: 'test', path: '/spec/taints/0', value: gate },
      { op: 'remove', path: '/spec/taints/0' },
    ]);
    expect(taintRemovalPatch(node({ taints: [other] }), DEFAULT_GATE_TAINT_KEY)).toBeUndefined();
  });
});

describe('events and timers', () => {
  it('merges the gate note into the pool transition Event: one Event per reconcile', () => {
    const ev = mergeEvents([{ reason: EventReason.Warm, message: 'pool gpu: warm' }], { removeTaintKey: 'k', outcome: GateOutcome.Ready, waitingFor: [] });
    expect(ev).toEqual([{ reason: EventReason.Warm, message: 'pool gpu: warm; removed gate taint k: every pool selecting the node is warm or partial' }]);
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
  type Op = { op: string; path: string; value?: unknown };
  class Store {
    constructor(public n: KNode) {}
    writes = 0;
    merge(labels: Record<string, string>): KNode {
      this.writes++;
      this.n = { ...this.n, metadata: { ...this.n.metadata, labels: { ...(this.n.metadata.labels ?? {}), ...labels } } };
      return this.n;
    }
    jsonPatch(ops: Op[]): KNode | 'conflict' {
      let taints = [...(this.n.spec?.taints ?? [])];
      for (const o of ops) {
        const i = Number(o.path.split('/').pop());
        if (o.op === 'test' && JSON.stringify(taints[i]) !== JSON.stringify(o.value)) return 'conflict';
        if (o.op === 'remove') taints = taints.filter((_, j) => j !== i);
      }
      this.writes++;
      this.n = { ...this.n, spec: { ...this.n.spec, taints } };
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
