/**
 * The controller loop under the fake clock, with in-memory fakes of the apiserver ports: counts the
 * calls per transition and checks every timed behaviour (resync, deadline, absolute bound, backoff,
 * cleanup budget) at exact instants, with no real time passing. The adapters behind the same ports
 * are tested over HTTP in kube.test.ts and against a real apiserver in test/integration/reconciler.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  Backoff,
  CLEANUP_BUDGET_MS,
  Controller,
  MAX_PEERS,
  BACKOFF_RESET_MS,
  SHORT_WATCH_MS,
  type ControllerOptions,
} from '../../src/reconciler/controller.js';
import { ABSOLUTE_GRACE_SECONDS } from '../../src/contract/gate-key.js';
import { Metrics } from '../../src/reconciler/metrics.js';
import { type Logger, type Registry, type Restarter } from '../../src/reconciler/ports.js';
import { ApiError } from '../../src/http/api-error.js';
import { EventReason } from '../../src/contract/events.js';
import { refreshDelayMs } from '../../src/reconciler/refresh.js';
import { STARTUP_TOLERATIONS } from '../../src/contract/placement.js';
import type { KPod } from '../../src/reconciler/kube-types.js';
import { FakeClock } from './fake-clock.js';
import { FakeKube } from './fake-kube.js';
import { IMAGES, SIDECAR, at, config, digest, gate, iso, node, pod, pool, pools, pullerPod, st } from './fixtures.js';

/** Records warnings, so tests can count retries; DBG=1 prints everything too. */
function logger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const dbg = process.env.DBG ? (m: string, f?: object) => console.error(m, f) : () => {};
  return { warnings, info: dbg, warn: (m, f) => (warnings.push(m), dbg(m, f)), error: dbg };
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

/** Pool gpu on node-a: node Ready at 10 s, the gate and another taint on it; the clock at `now`. */
function setup(
  over: {
    poolPods?: boolean;
    pools?: ReturnType<typeof pools>;
    registry?: Registry;
    restarter?: Restarter;
    refreshSeconds?: number;
    now?: number;
    opts?: Partial<ControllerOptions>;
    /** Set on the fake before the controller's first call. */
    before?: FakeKube['before'];
  } = {},
) {
  const clock = new FakeClock(over.now ?? at(60));
  const kube = new FakeKube(
    pod(IMAGES, [st.creating('c1'), st.creating('c2')]),
    node({ taints: [gate, { key: 'other', effect: 'NoSchedule' }] }),
  );
  if (over.before) kube.before = over.before;
  const log = logger();
  const metrics = new Metrics();
  const ctl = new Controller(
    {
      pods: kube.pods,
      ...(over.poolPods ? { poolPods: kube.poolPods } : {}),
      nodes: kube.nodes,
      events: kube.eventSink,
      clock,
      log,
      metrics,
      ...(over.registry ? { registry: over.registry } : {}),
      ...(over.restarter ? { restarter: over.restarter } : {}),
    },
    config({ refreshSeconds: over.refreshSeconds ?? 0 }),
    over.pools ?? pools(pool('gpu')),
    { sidecarName: SIDECAR, resyncMs: 300_000, gateResyncMs: 30_000, ...over.opts },
  );
  const stop = new AbortController();
  const done = ctl.run(stop.signal);
  /** SIGTERM: stop the loop and let cleanup run to its end under the clock. */
  const sigterm = async (): Promise<void> => {
    stop.abort();
    await clock.runUntil(done);
  };
  stops.push(async () => {
    if (!stop.signal.aborted) await sigterm();
  });
  return { clock, kube, log, metrics, ctl, sigterm };
}

/** A second gating pool that selects node-a (it tolerates the node's other taint). */
const base = pool('base', { tolerations: [{ key: 'other', operator: 'Exists' }] });
const running = (): ReturnType<typeof pod> => pod(IMAGES, [st.running('c1', 'reg/a:1', 30, 'a'), st.running('c2', 'reg/b:1', 30, 'b')]);

describe('Controller with burst pullers', () => {
  it('counts an image present once a puller started it, and warms the node while the holder still waits', async () => {
    const { clock, kube } = setup({ poolPods: true });
    await clock.settle();
    expect(kube.calls.filter((c) => c.includes('pool pods'))).toEqual(['LIST pool pods', 'WATCH pool pods']);
    // The holder started reg/a:1 itself; a puller pulls reg/b:1 and starts it first.
    kube.setPod(pod(IMAGES, [st.running('c1', 'reg/a:1', 30, 'a'), st.creating('c2')]));
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBeUndefined();
    kube.setPeer(pullerPod('puller-1-abc', ['reg/b:1'], [st.running('c1', 'reg/b:1', 35, 'b')]), 'ADDED');
    await clock.settle();
    expect(kube.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(kube.node.spec?.taints).toEqual([{ key: 'other', effect: 'NoSchedule' }]);
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm]);
  });

  it('counts early pullers like any other: on the host network and done before the sidecar started, the node is warm at its first look', async () => {
    const { clock, kube } = setup({ poolPods: true });
    const early = pullerPod('puller-1-abc', IMAGES, [st.running('c1', 'reg/a:1', 20, 'a'), st.running('c2', 'reg/b:1', 25, 'b')]);
    // As the apiserver lists a synthesized early puller: the host network, the node's own address
    // as its pod IP, the start-up tolerations. The sidecar reads none of it.
    const listed = {
      ...early,
      spec: { ...early.spec, hostNetwork: true, dnsPolicy: 'Default', tolerations: [...STARTUP_TOLERATIONS] },
      status: { ...early.status, podIP: '192.0.2.10', hostIP: '192.0.2.10' },
    } as KPod;
    kube.peers.set('puller-1-abc', listed);
    await clock.settle();
    expect(kube.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(kube.node.spec?.taints).toEqual([{ key: 'other', effect: 'NoSchedule' }]);
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm]);
  });

  it("decides nothing before the pool's first list answers: a slow list, then warm at the first look", async () => {
    let answer: () => void = () => undefined;
    const held = new Promise<void>((r) => (answer = r));
    const { clock, kube } = setup({ poolPods: true, before: (call) => (call === 'LIST pool pods' ? held : Promise.resolve()) });
    // The pullers are done; the holder's own containers still wait on the kubelet.
    kube.peers.set(
      'puller-1-abc',
      pullerPod('puller-1-abc', IMAGES, [st.running('c1', 'reg/a:1', 20, 'a'), st.running('c2', 'reg/b:1', 25, 'b')]),
    );
    await clock.settle();
    expect(kube.calls).toEqual(['LIST pod', 'LIST pool pods', 'WATCH pod']); // no node read, no write
    answer();
    await clock.settle();
    expect(kube.writes()).toEqual(['PATCH node merge', 'PATCH node json', 'POST event']);
    expect(kube.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(kube.calls.filter((c) => c === 'GET node')).toHaveLength(1);
  });

  it("a first list of the pool's pods that fails does not hold the loop: it decides from its own pod, then retries the list", async () => {
    let failed = false;
    const { clock, kube } = setup({
      poolPods: true,
      before: (call) => {
        if (call !== 'LIST pool pods' || failed) return Promise.resolve();
        failed = true;
        return Promise.reject(new ApiError(403, 'pods is forbidden', 'Forbidden'));
      },
    });
    kube.setPod(running());
    await clock.settle();
    expect(kube.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(kube.calls.filter((c) => c === 'LIST pool pods')).toHaveLength(1);
    await clock.advance(1_000); // the list's backoff: 1 s, jittered down to half
    expect(kube.calls.filter((c) => c === 'LIST pool pods')).toHaveLength(2);
  });

  it('reports a failing lane with its reason, and sees pullers listed before the watch started', async () => {
    const { clock, kube } = setup({ poolPods: true });
    kube.peers.set('puller-1-abc', pullerPod('puller-1-abc', ['reg/b:1'], [st.waiting('c1', 'ErrImagePull', 'manifest unknown')]));
    await clock.settle();
    const ann = JSON.parse(kube.node.metadata.annotations?.['status.prewarm.dev/gpu'] ?? '{}');
    expect(ann.failing).toEqual([{ image: 'reg/b:1', reason: 'ErrImagePull', message: 'manifest unknown' }]);
    // The puller goes (deleted); the holder's own pending view is what remains.
    kube.setPeer(pullerPod('puller-1-abc', ['reg/b:1'], []), 'DELETED');
    await clock.settle();
    expect(JSON.parse(kube.node.metadata.annotations?.['status.prewarm.dev/gpu'] ?? '{}').failing ?? []).toEqual([]);
  });
});

describe('Controller against a broken apiserver or proxy', () => {
  /** A puller of node `nodeName` that started reg/b:1. */
  const foreign = (name: string, nodeName: string): KPod => {
    const p = pullerPod(name, ['reg/b:1'], [st.running('c1', 'reg/b:1', 35, 'b')]);
    return { ...p, spec: { ...p.spec, nodeName } };
  };

  it("ignores pool pods of other nodes, listed or watched: their images are not this node's", async () => {
    const { clock, kube, metrics, log } = setup({ poolPods: true });
    kube.peers.set('puller-b-0', foreign('puller-b-0', 'node-b'));
    await clock.settle();
    kube.setPod(pod(IMAGES, [st.running('c1', 'reg/a:1', 30, 'a'), st.creating('c2')]));
    for (let i = 1; i <= 500; i++) kube.setPeer(foreign(`puller-b-${i}`, 'node-b'), 'ADDED');
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBeUndefined();
    expect(metrics.render()).toContain('prewarm_watch_ignored_total{pool="gpu",reason="other-node",watch="pool-pods"} 501');
    expect(log.warnings.filter((w) => w.startsWith('pool-pods watch: ignored'))).toHaveLength(1);
    // A puller of this node still counts.
    kube.setPeer(foreign('puller-a-1', 'node-a'), 'ADDED');
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm');
  });

  it('keeps at most MAX_PEERS pool pods of this node', async () => {
    const { clock, kube, metrics } = setup({ poolPods: true });
    await clock.settle();
    for (let i = 0; i < MAX_PEERS + 10; i++) kube.setPeer(pullerPod(`puller-${i}`, ['reg/z:1'], []), 'ADDED');
    await clock.settle();
    expect(metrics.render()).toContain('prewarm_watch_ignored_total{pool="gpu",reason="over-cap",watch="pool-pods"} 10');
  });

  it('does not let an empty or foreign pod replace its own: no warm label from zero images', async () => {
    const { clock, kube, metrics } = setup();
    await clock.settle();
    kube.setPod({ metadata: {} });
    await clock.settle();
    kube.setPod({ ...running(), metadata: { ...running().metadata, name: 'someone-else' } });
    await clock.settle();
    kube.setPod({ ...running(), spec: { ...running().spec, containers: [], initContainers: [] } });
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBeUndefined();
    expect(metrics.render()).toContain('prewarm_watch_ignored_total{pool="gpu",reason="invalid",watch="pod"} 3');
    kube.setPod(running());
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm');
  });

  it('refuses an empty pod from its list and retries with backoff instead of judging from it', async () => {
    const { clock, kube } = setup();
    await clock.settle();
    await clock.advance(SHORT_WATCH_MS);
    const real = kube.pods.list.bind(kube.pods);
    let empty = 2;
    kube.pods.list = () => (empty-- > 0 ? Promise.resolve({ pod: { metadata: {} }, resourceVersion: '1' }) : real());
    kube.expireWatches();
    await clock.settle();
    // The 410 waits 750 ms, then two empty answers wait 1.5 s and 3 s.
    await clock.advance(750 + 1500);
    expect(empty).toBe(0);
    expect(kube.calls.filter((c) => c === 'WATCH pod')).toHaveLength(1);
    await clock.advance(3000);
    expect(kube.calls.filter((c) => c === 'WATCH pod')).toHaveLength(2);
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBeUndefined();
  });
});

describe('Controller: watches that end at once', () => {
  it('backs off a watch that ends as soon as it opens, logs it once and counts it; a watch that runs resets it', async () => {
    const { clock, kube, metrics, log } = setup({ opts: { backoffInitialMs: 1000, backoffMaxMs: 8000 } });
    await clock.settle();
    kube.endWatchesAtOnce = true;
    kube.endWatches();
    await clock.settle();
    for (const wait of [750, 1500, 3000, 6000, 6000]) {
      expect(clock.pending).toContain(clock.now() + wait);
      await clock.advance(wait);
    }
    expect(kube.calls.filter((c) => c === 'WATCH pod')).toHaveLength(6);
    expect(log.warnings.filter((w) => w.startsWith('pod watch restarting with backoff'))).toHaveLength(1);
    expect(metrics.render()).toContain('prewarm_watch_restarts_total{cause="short",pool="gpu",watch="pod"} 6');
    kube.endWatchesAtOnce = false;
    await clock.advance(6000);
    await clock.advance(SHORT_WATCH_MS);
    kube.endWatches();
    await clock.settle();
    expect(metrics.render()).toContain('prewarm_watch_restarts_total{cause="ended",pool="gpu",watch="pod"} 1');
    expect(kube.calls.filter((c) => c === 'WATCH pod')).toHaveLength(8);
  });
});

/** The node as an admin's `kubectl label` / `kubectl taint` leaves it. */
function edit(kube: FakeKube, over: { labels?: Record<string, string>; taints?: NonNullable<FakeKube['node']['spec']>['taints'] }): void {
  kube.node = {
    ...kube.node,
    metadata: { ...kube.node.metadata, ...(over.labels ? { labels: over.labels } : {}) },
    spec: { ...kube.node.spec, ...(over.taints ? { taints: over.taints } : {}) },
  };
}

describe('Controller: pinned bytes', () => {
  it("exports the bytes of our pod's images from the node's image list it reads anyway, complete only when every image is listed", async () => {
    const { clock, kube, metrics } = setup();
    const list = (names: string[]) => {
      kube.node = {
        ...kube.node,
        status: { ...kube.node.status, images: names.map((n, i) => ({ names: [n], sizeBytes: (i + 1) << 20 })) },
      };
    };
    // The node lists a and b by digest; the helper and the sidecar image are cut from the list.
    list([`reg/a@${digest('a')}`, `reg/b@${digest('b')}`]);
    kube.setPod(running());
    await clock.settle();
    expect(metrics.render()).toContain(`prewarm_pool_pinned_bytes{complete="false",pool="gpu"} ${3 << 20}`);
    list([`reg/a@${digest('a')}`, `reg/b@${digest('b')}`, 'reg/busybox:1', 'reg/prewarm:1']);
    await clock.advance(300_000);
    const text = metrics.render();
    expect(text).toContain(`prewarm_pool_pinned_bytes{complete="true",pool="gpu"} ${10 << 20}`);
    // One series per pool: the incomplete one is gone.
    expect(text).not.toContain('complete="false"');
  });
});

describe('Controller and hand edits by an admin (what wins: docs/troubleshooting.md)', () => {
  it('the gating taint removed by hand while warming stays removed; the pool still turns warm, once', async () => {
    const { clock, kube } = setup();
    await clock.settle();
    edit(kube, { taints: [{ key: 'other', effect: 'NoSchedule' }] });
    await clock.advance(30_000);
    kube.setPod(running());
    await clock.settle();
    expect(kube.node.spec?.taints).toEqual([{ key: 'other', effect: 'NoSchedule' }]);
    expect(kube.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(kube.writes()).toEqual(['PATCH node merge', 'POST event']);
    expect(kube.events).toEqual([{ reason: EventReason.Warm, message: expect.not.stringContaining('removed gate taint') }]);
  });

  it('the gating taint put back by hand on a warm node is removed again at the next resync, with one GateOpened Event', async () => {
    const { clock, kube } = setup();
    kube.setPod(running());
    await clock.settle();
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm]);
    edit(kube, { taints: [...(kube.node.spec?.taints ?? []), gate] });
    const writes = kube.writes().length;
    await clock.advance(300_000 - 1);
    expect(kube.node.spec?.taints?.map((t) => t.key)).toContain(gate.key);
    await clock.advance(1);
    expect(kube.node.spec?.taints).toEqual([{ key: 'other', effect: 'NoSchedule' }]);
    expect(kube.writes().slice(writes)).toEqual(['PATCH node json', 'POST event']);
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm, EventReason.GateOpened]);
  });

  it('our label set to warm by hand while warming is taken back within the gate resync, without an Event', async () => {
    const { clock, kube } = setup();
    await clock.settle();
    edit(kube, { labels: { 'prewarm.dev/gpu': 'warm' } });
    await clock.advance(30_000);
    expect(kube.node.metadata.labels ?? {}).toEqual({});
    expect(kube.node.spec?.taints?.map((t) => t.key)).toContain(gate.key);
    expect(kube.writes()).toEqual(['PATCH node merge']);
    expect(kube.events).toEqual([]);
  });

  it('our label changed by hand on a warm node is restored at the next resync, with one Warm Event for that transition', async () => {
    const { clock, kube } = setup();
    kube.setPod(running());
    await clock.settle();
    edit(kube, { labels: { 'prewarm.dev/gpu': 'cold' } });
    await clock.advance(300_000);
    expect(kube.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm, EventReason.Warm]);
    // Restored once: later resyncs write nothing.
    const writes = kube.writes().length;
    await clock.advance(300_000);
    expect(kube.writes().length).toBe(writes);
  });
});

describe('Controller', () => {
  it('warms the node: one label write, one taint removal, one Event; then idles without writes', async () => {
    const { clock, kube, metrics } = setup();
    await clock.settle();
    expect(kube.calls).toEqual(['LIST pod', 'WATCH pod', 'GET node']); // nothing to say while pulling
    kube.setPod(running());
    await clock.settle();
    expect(kube.writes()).toEqual(['PATCH node merge', 'PATCH node json', 'POST event']);
    expect(kube.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(kube.node.spec?.taints).toEqual([{ key: 'other', effect: 'NoSchedule' }]);
    expect(kube.events).toEqual([{ reason: EventReason.Warm, message: expect.stringContaining('removed gate taint prewarm.dev/warming') }]);
    expect(metrics.render()).toContain('prewarm_pool_warm{pool="gpu"} 1');
    expect(metrics.render()).toContain('prewarm_gate_opened_total{outcome="ready",pool="gpu"} 1');
    // A pod status change that changes nothing, then a resync: one GET of the node each, no write.
    const calls = kube.calls.length;
    kube.setPod(running());
    await clock.settle();
    expect(clock.pending).toEqual([clock.now() + 300_000]); // the gate is gone: the slow resync
    await clock.advance(300_000);
    expect(kube.calls.slice(calls)).toEqual(['GET node', 'GET node']);
  });

  it('idles on its resync alone: an hour without events, each watch ended at the server timeout, costs 12 node reads and 24 watches', async () => {
    const { clock, kube } = setup({ poolPods: true });
    kube.setPod(running());
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm');
    const from = kube.calls.length;
    const sleeps = clock.sleeps.length;
    for (let round = 0; round < 12; round++) {
      await clock.advance(290_000);
      kube.endWatches();
      await clock.advance(10_000);
    }
    const tally: Record<string, number> = {};
    for (const c of kube.calls.slice(from)) tally[c] = (tally[c] ?? 0) + 1;
    // A watch that ran its course is reopened at once, from where it was: no list, no backoff.
    expect(tally).toEqual({ 'GET node': 12, 'WATCH pod': 12, 'WATCH pool pods': 12 });
    expect(clock.sleeps.slice(sleeps)).toEqual(Array.from({ length: 12 }, () => 300_000));
    expect(clock.pending).toEqual([clock.now() + 300_000]);
  });

  it('re-reads the node every gate resync while the taint waits for another pool', async () => {
    const { clock, kube } = setup({ pools: pools(pool('gpu'), base) });
    kube.setPod(running());
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm');
    expect(kube.node.spec?.taints?.map((t) => t.key)).toContain('prewarm.dev/warming');
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm]);
    const calls = kube.calls.length;
    await clock.advance(30_000 - 1);
    expect(kube.calls.length).toBe(calls);
    await clock.advance(1);
    expect(kube.calls.slice(calls)).toEqual(['GET node']);
    // The other pool turns warm: the next resync lifts the taint.
    kube.node = { ...kube.node, metadata: { ...kube.node.metadata, labels: { ...kube.node.metadata.labels, 'prewarm.dev/base': 'warm' } } };
    await clock.advance(30_000);
    expect(kube.node.spec?.taints?.map((t) => t.key)).toEqual(['other']);
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm, EventReason.GateOpened]);
  });

  it('wakes at its deadline, not a millisecond earlier, and fails open', async () => {
    // Node Ready at 10 s, deadline 600 s: the pool is partial from 610 s. The first wake-up is
    // 1 ms later: a real timer can fire up to 1 ms early, and the core must see the deadline passed.
    const deadlineAt = at(610);
    const { clock, kube } = setup({ now: at(600), opts: { gateResyncMs: 3_600_000 } });
    await clock.settle();
    expect(clock.pending).toEqual([deadlineAt + 1]);
    await clock.advanceTo(deadlineAt);
    expect(kube.writes()).toEqual([]);
    await clock.advance(1);
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('partial');
    expect(kube.node.spec?.taints?.map((t) => t.key)).toEqual(['other']);
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Partial]);
    expect(kube.writes()).toEqual(['PATCH node merge', 'PATCH node json', 'POST event']);
  });

  it('forces the gate open at the absolute bound when another gating pool never reports', async () => {
    // Node created at 0 s; the longest deadline is 600 s: the bound is 600 + grace seconds after.
    const forceAt = at(600 + ABSOLUTE_GRACE_SECONDS);
    const { clock, kube } = setup({ pools: pools(pool('gpu'), base), opts: { gateResyncMs: 3_600_000 } });
    kube.setPod(running());
    await clock.settle();
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm]);
    expect(clock.pending).toEqual([forceAt + 1]);
    await clock.advanceTo(forceAt);
    expect(kube.node.spec?.taints?.map((t) => t.key)).toContain('prewarm.dev/warming');
    await clock.advance(1);
    expect(kube.node.spec?.taints?.map((t) => t.key)).toEqual(['other']);
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm, EventReason.GateForcedOpen]);
  });

  it('removes its label and annotation on SIGTERM', async () => {
    const { clock, kube, sigterm } = setup();
    kube.setPod(running());
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm');
    await sigterm();
    expect(kube.node.metadata.labels ?? {}).toEqual({});
    expect(kube.node.metadata.annotations ?? {}).toEqual({});
  });

  it('cleans up when the watch shows its deletionTimestamp', async () => {
    const { clock, kube } = setup();
    kube.setPod(running());
    await clock.settle();
    kube.setPod({ ...kube.pod, metadata: { ...kube.pod.metadata, deletionTimestamp: iso(100) } });
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBeUndefined();
    expect(kube.node.metadata.annotations?.['status.prewarm.dev/gpu']).toBeUndefined();
  });

  it('a 410 on every watch, each request taking 2 s, costs a few requests a minute: a slow round trip never resets the backoff', async () => {
    const { clock, kube, metrics } = setup({ poolPods: true });
    await clock.settle();
    await clock.advance(SHORT_WATCH_MS);
    // A slow apiserver, or a fast clock (the soak bench), where one round trip is seconds long:
    // each watch "ran" 2 s before its 410, longer than a very short watch.
    kube.before = () => clock.sleep(2000, new AbortController().signal);
    kube.expireWatchesAtOnce = true;
    kube.expireWatches();
    const from = kube.calls.length;
    await clock.advance(10 * 60_000);
    const mid = kube.calls.length;
    await clock.advance(20 * 60_000);
    // Backoff to its 60 s cap (45 s at this jitter): per watch one list, one watch and the
    // reconcile the list kicks, per 47 s; two watches.
    expect((mid - from) / 10).toBeLessThanOrEqual(12);
    expect((kube.calls.length - mid) / 20).toBeLessThanOrEqual(8);
    expect(metrics.render()).toMatch(/prewarm_watch_restarts_total\{cause="expired",pool="gpu",watch="pod"\} \d+\n/);
    // The server heals: the next list's watch holds, and a later 410 is listed again after the first step.
    kube.expireWatchesAtOnce = false;
    await clock.advance(60_000);
    const healed = kube.calls.length;
    await clock.advance(BACKOFF_RESET_MS);
    expect(kube.calls.slice(healed).filter((c) => c === 'LIST pod' || c === 'WATCH pod')).toHaveLength(0);
    kube.expireWatches();
    await clock.advance(750 + 3 * 2000);
    expect(kube.calls.slice(healed).filter((c) => c === 'LIST pod')).toHaveLength(1);
  });

  it('re-reads its pod after the watch expires (410) and keeps following it', async () => {
    const { clock, kube } = setup();
    await clock.settle();
    // The watch has run a while; the list again waits out the first step of the backoff.
    await clock.advance(SHORT_WATCH_MS);
    kube.expireWatches();
    await clock.settle();
    expect(kube.calls.filter((c) => c.endsWith(' pod'))).toEqual(['LIST pod', 'WATCH pod']);
    await clock.advance(750);
    expect(kube.calls.filter((c) => c.endsWith(' pod'))).toEqual(['LIST pod', 'WATCH pod', 'LIST pod', 'WATCH pod']);
    kube.setPod(running());
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm');
  });

  it('rides out an apiserver outage: retries back off exponentially up to the cap, then reset', async () => {
    // random() = 0.5 takes each wait at 3/4 of its cap: 1000 ms, doubling, capped at 4000 ms.
    const { clock, kube, metrics, log } = setup({ opts: { backoffInitialMs: 1000, backoffMaxMs: 4000 } });
    await clock.settle();
    kube.failNext = 5;
    kube.setPod(running());
    await clock.settle();
    for (const wait of [750, 1500, 3000, 3000, 3000]) {
      expect(clock.pending).toEqual([clock.now() + wait]);
      expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBeUndefined();
      await clock.advance(wait);
    }
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm');
    expect(log.warnings.filter((w) => w === 'reconcile failed; retrying')).toHaveLength(5);
    expect(metrics.render()).toContain('prewarm_api_errors_total{code="503",op="reconcile",pool="gpu"} 5');
    // Success reset the backoff: the next outage starts again from the first step.
    kube.failNext = 1;
    kube.setPod(running());
    await clock.settle();
    expect(clock.pending).toEqual([clock.now() + 750]);
  });

  it('restarts a failing pod watch with its own backoff', async () => {
    const { clock, kube } = setup({ opts: { backoffInitialMs: 1000, backoffMaxMs: 60_000 } });
    await clock.settle();
    await clock.advance(SHORT_WATCH_MS);
    // After a 410 the watch lists the pod again, after a backoff: that list and its first retry fail.
    kube.failNext = 2;
    kube.expireWatches();
    await clock.settle();
    for (const wait of [750, 1500, 3000]) {
      expect(clock.pending[0]).toBe(clock.now() + wait);
      await clock.advance(wait);
    }
    expect(kube.calls.filter((c) => c.endsWith(' pod'))).toEqual([
      'LIST pod',
      'WATCH pod',
      'LIST pod',
      'LIST pod',
      'LIST pod',
      'WATCH pod',
    ]);
    kube.setPod(running());
    await clock.settle();
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm');
  });

  it('SIGTERM cleanup retries with backoff and succeeds within the budget', async () => {
    const { clock, kube, sigterm } = setup();
    kube.setPod(running());
    await clock.settle();
    kube.failNext = 2; // the first cleanup attempt's GET and its retry's
    const t0 = clock.now();
    await sigterm();
    expect(clock.now() - t0).toBe(200 + 400);
    expect(kube.node.metadata.labels ?? {}).toEqual({});
  });

  it('SIGTERM cleanup gives up once its budget is spent, against a slow, failing apiserver', async () => {
    const { clock, kube, log, sigterm } = setup();
    kube.setPod(running());
    await clock.settle();
    // Every call now hangs 6 s and then fails: attempts start at 0, 6.2 and 12.6 s; the fourth
    // would start at 19.4 s, past the 15 s budget.
    kube.before = async (call) => {
      await clock.sleep(6000, new AbortController().signal);
      throw new ApiError(0, `${call}: timeout`);
    };
    const t0 = clock.now();
    await sigterm();
    expect(log.warnings.filter((w) => w === 'cleanup failed')).toHaveLength(3);
    expect(clock.now() - t0).toBe(3 * 6000 + 200 + 400 + 800);
    expect(clock.now() - t0).toBeGreaterThanOrEqual(CLEANUP_BUDGET_MS);
    expect(kube.node.metadata.labels?.['prewarm.dev/gpu']).toBe('warm'); // stale, recomputed by the next pod
  });

  it('runs the moved-tag refresh beside the loop, on its interval', async () => {
    const restarted: string[] = [];
    const registry: Registry = { digest: (img) => Promise.resolve(img === 'reg/b:1' ? digest('f') : digest('a')) };
    const restarter: Restarter = { restart: (c, image) => (restarted.push(`${c}=${image}`), Promise.resolve()) };
    const { clock, kube } = setup({ registry, restarter, refreshSeconds: 100 });
    kube.setPod(running());
    const interval = refreshDelayMs(100, 0.5);
    await clock.advance(interval - 1);
    expect(restarted).toEqual([]);
    await clock.advance(1);
    expect(restarted).toEqual([`c2=reg/b:1@${digest('f')}`]);
    expect(kube.events.map((e) => e.reason)).toEqual([EventReason.Warm, EventReason.TagMoved]);
  });
});

describe('Backoff', () => {
  it.each([
    ['the top of each range', 1, [100, 200, 400, 800, 1000, 1000]],
    ['the bottom of each range', 0, [50, 100, 200, 400, 500, 500]],
  ])('doubles from the initial wait up to the cap, with full jitter: %s', (_name, r, want) => {
    const b = new Backoff(100, 1000, () => r);
    expect(want.map(() => b.next())).toEqual(want);
  });

  it('starts over after reset', () => {
    const b = new Backoff(100, 1000, () => 1);
    expect([b.next(), b.next(), b.next()]).toEqual([100, 200, 400]);
    b.reset();
    expect(b.next()).toBe(100);
  });

  it('never waits less than 1 ms, which would spin', () => {
    expect(new Backoff(0, 10, () => 0).next()).toBe(1);
  });
});

describe('Controller: the startup probe (the holder image containers held back)', () => {
  it('holds them while pullers cover every missing image, and releases them for good once warm', async () => {
    const { clock, kube, ctl } = setup({ poolPods: true });
    kube.peers.set('puller-1-abc', pullerPod('puller-1-abc', IMAGES, [st.creating('c1'), st.creating('c2')]));
    await clock.settle();
    expect(kube.calls).toContain('GET node');
    expect(ctl.imagesReleased()).toBe(false);
    const done = pullerPod('puller-1-abc', IMAGES, [st.running('c1', 'reg/a:1', 35, 'a'), st.running('c2', 'reg/b:1', 36, 'b')]);
    kube.setPeer(done, 'MODIFIED');
    await clock.settle();
    expect(kube.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(ctl.imagesReleased()).toBe(true);
    // The pullers leave and the holder's containers have not started yet: still released.
    kube.setPeer(done, 'DELETED');
    await clock.settle();
    expect(ctl.imagesReleased()).toBe(true);
  });

  it('releases them at the first decision when no puller is on the node to pull the images', async () => {
    const { clock, ctl } = setup({ poolPods: true });
    expect(ctl.imagesReleased()).toBe(false);
    await clock.settle();
    expect(ctl.imagesReleased()).toBe(true);
  });

  it('releases them once the deadline has passed since it started, though the apiserver never answered', async () => {
    const { clock, ctl, kube } = setup({
      poolPods: true,
      before: () => Promise.reject(new ApiError(503, 'unavailable', 'ServiceUnavailable')),
    });
    await clock.advance(599_000);
    expect(kube.node.metadata.labels).toBeUndefined();
    expect(ctl.imagesReleased()).toBe(false);
    await clock.advance(1_000);
    expect(ctl.imagesReleased()).toBe(true);
  });
});
