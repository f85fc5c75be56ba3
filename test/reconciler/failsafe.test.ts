/**
 * The fail-safe's pure core and its loop, under a fake clock and in-memory ports: which gates are
 * past the bound, which nodes have a running sidecar, what is removed, and that a look makes a
 * bounded number of calls whatever the apiserver answers.
 */
import { describe, expect, it } from 'vitest';
import { ABSOLUTE_GRACE_SECONDS } from '../../src/contract/gate-key.js';
import { EventReason, parseNodeEvent, type EventIntent } from '../../src/contract/events.js';
import { FAILSAFE_DEFAULT_GRACE_SECONDS, FAILSAFE_MAX_RELEASES, FAILSAFE_PERIOD_SECONDS } from '../../src/contract/failsafe.js';
import { DEFAULTS } from '../../src/contract/names.js';
import { ApiError } from '../../src/http/api-error.js';
import { decideReleases, overdueGates, runsSidecar } from '../../src/reconciler/failsafe.js';
import { look, runFailsafe } from '../../src/reconciler/failsafe-loop.js';
import type { KNode, KPod, KTaint } from '../../src/reconciler/kube-types.js';
import type { FailsafeKube, JsonPatchOp, Logger } from '../../src/reconciler/ports.js';
import { FakeClock } from './fake-clock.js';
import { at, gate, node, pod, pool, pools, SIDECAR, st } from './fixtures.js';

// PreferNoSchedule: the pools still select a node that carries it.
const OTHER: KTaint = { key: 'dedicated', value: 'x', effect: 'PreferNoSchedule' };
const GRACE = FAILSAFE_DEFAULT_GRACE_SECONDS;
const named = (name: string, n: KNode): KNode => ({ ...n, metadata: { ...n.metadata, name } });
const bundle = pools(pool('cpu', { deadlineSeconds: 120 }), pool('gpu', { deadlineSeconds: 300, nodeSelector: { gpu: 'yes' } }));
const sidecarRunning = (): KPod => pod([], [], { initStatuses: [st.running(SIDECAR, 'reg/prewarm:1')] });
const sidecarWaiting = (): KPod => pod([], [], { initStatuses: [st.waiting(SIDECAR, 'ImagePullBackOff')] });

describe('overdueGates', () => {
  it('counts the bound from creation: the longest deadline of the pools gating the node, plus the grace', () => {
    const n = node({ taints: [OTHER, gate], readyAt: null });
    expect(overdueGates([n], bundle, at(120 + GRACE) - 1, GRACE)).toEqual([]);
    expect(overdueGates([n], bundle, at(120 + GRACE), GRACE)).toEqual([
      { node: n, key: gate.key, createdAt: at(0), boundAt: at(120 + GRACE), waitingFor: ['cpu'] },
    ]);
    // The gpu pool selects it too once labelled: its longer deadline moves the bound.
    const g = node({ taints: [gate], labels: { gpu: 'yes', 'prewarm.dev/cpu': 'warm' } });
    expect(overdueGates([g], bundle, at(300 + GRACE) - 1, GRACE)).toEqual([]);
    expect(overdueGates([g], bundle, at(300 + GRACE), GRACE)[0]?.waitingFor).toEqual(['gpu']);
  });

  it('by default acts later than any sidecar would', () => {
    expect(GRACE).toBeGreaterThan(ABSOLUTE_GRACE_SECONDS);
    const n = node({ taints: [gate] });
    expect(overdueGates([n], bundle, at(120 + ABSOLUTE_GRACE_SECONDS), GRACE)).toEqual([]);
  });

  it('binds a taint that no pool selecting the node lifts by the default deadline', () => {
    const n = node({ taints: [gate] });
    const only = pools(pool('gpu', { nodeSelector: { gpu: 'yes' } }));
    expect(overdueGates([n], only, at(DEFAULTS.deadlineSeconds + 10) - 1, 10)).toEqual([]);
    expect(overdueGates([n], only, at(DEFAULTS.deadlineSeconds + 10), 10)).toHaveLength(1);
  });

  it('looks only at the gate keys of the bundle, and never without a creation time', () => {
    const later = at(10_000);
    expect(overdueGates([node({ taints: [OTHER] })], bundle, later, 10)).toEqual([]);
    const { creationTimestamp: _, ...meta } = node({ taints: [gate] }).metadata;
    expect(overdueGates([{ metadata: meta, spec: { taints: [gate] } }], bundle, later, 10)).toEqual([]);
  });

  it('takes the longest overdue first, at most a bounded number per look', () => {
    const many = Array.from({ length: FAILSAFE_MAX_RELEASES + 5 }, (_, i) =>
      named(`n-${i}`, node({ taints: [gate], createdAt: FAILSAFE_MAX_RELEASES + 5 - i })),
    );
    const o = overdueGates(many, bundle, at(100_000), 10);
    expect(o).toHaveLength(FAILSAFE_MAX_RELEASES);
    expect(o[0]?.node.metadata.name).toBe(`n-${FAILSAFE_MAX_RELEASES + 4}`);
  });
});

describe('runsSidecar and decideReleases', () => {
  it('a running sidecar counts; a waiting one, or one in a pod being deleted, does not', () => {
    expect(runsSidecar([sidecarRunning()])).toBe(true);
    expect(runsSidecar([sidecarWaiting()])).toBe(false);
    expect(runsSidecar([pod([], [], { deleting: true, initStatuses: [st.running(SIDECAR, 'reg/prewarm:1')] })])).toBe(false);
    expect(runsSidecar([])).toBe(false);
  });

  it('removes the gate of a node without a running sidecar, with a test-guarded patch and the Event saying why', () => {
    const n = node({ taints: [OTHER, gate] });
    const overdue = overdueGates([n], bundle, at(200 + GRACE), GRACE);
    const [r] = decideReleases(overdue, new Map([['node-a', [sidecarWaiting()]]]), at(200 + GRACE));
    expect(r?.ops).toEqual([
      { op: 'test', path: '/spec/taints/1', value: gate },
      { op: 'remove', path: '/spec/taints/1' },
    ]);
    expect(r?.event.reason).toBe(EventReason.GateFailsafeOpened);
    expect(r?.event.message).toContain(`on the node ${200 + GRACE}s after it was created, past its bound of ${120 + GRACE}s`);
    expect(r?.event.message).toContain('pools not ready: cpu');
    expect(parseNodeEvent(r?.event.reason, r?.event.message)).toEqual({ reason: EventReason.GateFailsafeOpened, gate: 'failsafe' });
  });

  it('leaves a node with a running sidecar, and one whose pods could not be listed, to a later look', () => {
    const overdue = overdueGates([node({ taints: [gate] })], bundle, at(10_000), GRACE);
    expect(decideReleases(overdue, new Map([['node-a', [sidecarRunning()]]]), at(10_000))).toEqual([]);
    expect(decideReleases(overdue, new Map(), at(10_000))).toEqual([]);
  });
});

/** In-memory apiserver: nodes by name, holder pods by node, every call recorded. */
class FakeFailsafeKube implements FailsafeKube {
  readonly calls: string[] = [];
  failList = false;
  conflict = false;
  constructor(
    readonly nodes: Map<string, KNode>,
    readonly holders: Map<string, KPod[]> = new Map(),
  ) {}
  listNodes(): Promise<KNode[]> {
    this.calls.push('list nodes');
    return this.failList ? Promise.reject(new ApiError(0, 'refused')) : Promise.resolve([...this.nodes.values()]);
  }
  holdersOn(name: string): Promise<KPod[]> {
    this.calls.push(`pods ${name}`);
    return Promise.resolve(this.holders.get(name) ?? []);
  }
  patchNode(name: string, ops: readonly JsonPatchOp[]): Promise<KNode> {
    this.calls.push(`patch ${name}`);
    const n = this.nodes.get(name);
    if (!n || this.conflict) return Promise.reject(new ApiError(422, 'the test failed'));
    const removed = new Set(ops.filter((o) => o.op === 'remove').map((o) => Number(o.path.split('/').pop())));
    const after = { ...n, spec: { taints: (n.spec?.taints ?? []).filter((_, i) => !removed.has(i)) } };
    this.nodes.set(name, after);
    return Promise.resolve(after);
  }
}

function ports(kube: FakeFailsafeKube, clock: FakeClock) {
  const emitted: { node: string; e: EventIntent }[] = [];
  const lines: string[] = [];
  const log: Logger = {
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
  };
  const events = {
    emit: (n: KNode, e: EventIntent) => {
      emitted.push({ node: n.metadata.name ?? '', e });
      return Promise.resolve();
    },
  };
  return { p: { kube, events, clock, log }, emitted, lines };
}

describe('the fail-safe loop', () => {
  it('lists pods only on overdue nodes, removes the gate where no sidecar runs, and posts one Event', async () => {
    const clock = new FakeClock(at(10_000));
    const kube = new FakeFailsafeKube(
      new Map([
        ['stuck', named('stuck', node({ taints: [gate] }))],
        ['served', named('served', node({ taints: [gate] }))],
        ['young', named('young', node({ taints: [gate], createdAt: 9_990 }))],
        ['open', named('open', node({}))],
      ]),
      new Map([['served', [sidecarRunning()]]]),
    );
    const { p, emitted } = ports(kube, clock);
    expect(await look(p, bundle, GRACE)).toEqual({ overdue: 2, released: ['stuck'] });
    expect(kube.calls).toEqual(['list nodes', 'pods stuck', 'pods served', 'patch stuck']);
    expect(kube.nodes.get('stuck')?.spec?.taints).toEqual([]);
    expect(emitted.map((x) => `${x.node} ${x.e.reason}`)).toEqual(['stuck GateFailsafeOpened']);
    // The next look finds nothing more to do on it.
    kube.calls.length = 0;
    expect(await look(p, bundle, GRACE)).toEqual({ overdue: 1, released: [] });
  });

  it('makes no retry inside a look: a failed list or a failed test waits for the next period', async () => {
    const clock = new FakeClock(at(10_000));
    const kube = new FakeFailsafeKube(new Map([['stuck', named('stuck', node({ taints: [gate] }))]]));
    const { p, emitted, lines } = ports(kube, clock);
    kube.failList = true;
    expect(await look(p, bundle, GRACE)).toEqual({ overdue: 0, released: [] });
    expect(kube.calls).toEqual(['list nodes']);
    kube.failList = false;
    kube.conflict = true;
    kube.calls.length = 0;
    expect(await look(p, bundle, GRACE)).toEqual({ overdue: 1, released: [] });
    expect(kube.calls).toEqual(['list nodes', 'pods stuck', 'patch stuck']);
    expect(emitted).toEqual([]);
    expect(lines.at(-1)).toBe('info gate taint changed meanwhile; looking again next period');
  });

  it('looks once per period, jittered, until stopped', async () => {
    const clock = new FakeClock(at(0));
    const kube = new FakeFailsafeKube(new Map());
    const { p } = ports(kube, clock);
    const stop = new AbortController();
    const run = runFailsafe(p, () => bundle, GRACE, stop.signal);
    await clock.advance(3 * FAILSAFE_PERIOD_SECONDS * 1000);
    stop.abort();
    await run;
    expect(kube.calls.filter((c) => c === 'list nodes').length).toBe(4);
    expect(new Set(clock.sleeps)).toEqual(new Set([FAILSAFE_PERIOD_SECONDS * 1000]));
  });
});
