/**
 * The controller loop with the real HTTP adapters against the loopback fake apiserver: counts the
 * API calls per transition, checks cleanup on SIGTERM and recovery from an apiserver outage.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Controller } from '../../src/reconciler/controller.js';
import { KubeHttp } from '../../src/reconciler/adapters/http.js';
import { KubeEventSink, KubeNodePort, KubePodSource } from '../../src/reconciler/adapters/kube.js';
import { systemClock } from '../../src/reconciler/adapters/system.js';
import { Metrics } from '../../src/reconciler/metrics.js';
import type { Logger, Registry, Restarter } from '../../src/reconciler/ports.js';
import { EventReason } from '../../src/reconciler/reasons.js';
import { FakeApiserver } from '../../harness/fake-apiserver.js';
import { sleep, waitFor } from '../../harness/time.js';
import { SIDECAR, config, digest, gate, node, pod, pool, pools, st } from './fixtures.js';

const quiet: Logger = process.env.DBG ? (await import('../../src/reconciler/adapters/log.js')).jsonLogger({}) : { info: () => {}, warn: () => {}, error: () => {} };
const IMAGES = ['reg/a:1', 'reg/b:1'];

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  await waitFor('condition', cond, ms, 10);
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  const list = cleanup.reverse();
  cleanup = [];
  for (const c of list) await c();
});

async function setup(over: { pools?: ReturnType<typeof pools>; registry?: Registry; restarter?: Restarter; refreshSeconds?: number; readyAgoMs?: number } = {}) {
  const now = Date.now();
  const readyAt = new Date(now - (over.readyAgoMs ?? 20_000)).toISOString();
  const api = await new FakeApiserver(
    { ...pod(IMAGES, [st.creating('c1'), st.creating('c2')]), metadata: { name: 'pull-a-xyz', namespace: 'prewarm', uid: 'u', creationTimestamp: readyAt } },
    {
      ...node({ taints: [gate, { key: 'other', effect: 'NoSchedule' }] }),
      metadata: { name: 'node-a', uid: 'n', creationTimestamp: new Date(now - (over.readyAgoMs ?? 20_000) - 10_000).toISOString() },
      status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: readyAt }] },
    },
  ).start();
  const kube = new KubeHttp({ server: api.url });
  const cfg = config({ refreshSeconds: over.refreshSeconds ?? 0 });
  const metrics = new Metrics();
  const ctl = new Controller(
    {
      pods: new KubePodSource(kube, 'prewarm', 'pull-a-xyz'),
      nodes: new KubeNodePort(kube, 'node-a'),
      events: new KubeEventSink(kube, cfg, () => Date.now()),
      clock: systemClock,
      log: quiet,
      metrics,
      ...(over.registry ? { registry: over.registry } : {}),
      ...(over.restarter ? { restarter: over.restarter } : {}),
    },
    cfg,
    over.pools ?? pools(pool('gpu')),
    { sidecarName: SIDECAR, backoffInitialMs: 5, backoffMaxMs: 20, resyncMs: 60_000, gateResyncMs: 60_000 },
  );
  const stop = new AbortController();
  const done = ctl.run(stop.signal);
  cleanup.push(async () => {
    stop.abort();
    await done;
    kube.close();
    await api.stop();
  });
  return { api, ctl, stop, done, metrics };
}

const running = (at: number) => pod(IMAGES, [st.running('c1', 'reg/a:1', at, 'a'), st.running('c2', 'reg/b:1', at, 'b')]);

describe('Controller against the fake apiserver', () => {
  it('warms the node: one label write, one taint removal, one Event; then idles without writes', async () => {
    const { api, metrics } = await setup();
    await until(() => api.requests.some((r) => r.path.includes('watch=true')));
    expect(api.writes()).toEqual([]); // nothing to say while pulling
    api.setPod({ ...running(0), metadata: api.pod.metadata });
    await until(() => api.events.length === 1);
    expect(api.node.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    expect(api.node.spec?.taints).toEqual([{ key: 'other', effect: 'NoSchedule' }]);
    const w = api.writes();
    expect(w.map((r) => `${r.method} ${r.contentType ?? ''}`)).toEqual([
      'PATCH application/strategic-merge-patch+json',
      'PATCH application/json-patch+json',
      'POST application/json',
    ]);
    expect(api.events[0]).toMatchObject({ reason: EventReason.Warm, type: 'Normal', involvedObject: { kind: 'Node', name: 'node-a', uid: 'n' } });
    expect(String(api.events[0]?.message)).toContain('removed gate taint prewarm.dev/warming');
    // Only our pod and node were ever named: no list of pods or nodes.
    for (const r of api.requests) expect(r.path).toMatch(/^\/api\/v1\/(nodes\/node-a|namespaces\/prewarm\/(pods\/pull-a-xyz|pods\?watch=true&fieldSelector=metadata.name%3Dpull-a-xyz.*)|namespaces\/default\/events)$/);
    await until(() => metrics.render().includes('prewarm_pool_warm{pool="gpu"} 1'));
    expect(metrics.render()).toContain('prewarm_gate_opened_total{outcome="ready",pool="gpu"} 1');
    // Another pod status change that changes nothing: a GET of the node, no write.
    const before = api.writes().length;
    api.setPod({ ...running(0), metadata: api.pod.metadata });
    const gets = api.requests.length;
    await until(() => api.requests.length > gets);
    await sleep(50);
    expect(api.writes().length).toBe(before);
  });

  it('removes its label and annotation on SIGTERM', async () => {
    const { api, stop, done } = await setup();
    await until(() => api.requests.some((r) => r.path.includes('watch=true')));
    api.setPod({ ...running(0), metadata: api.pod.metadata });
    await until(() => api.node.metadata.labels?.['prewarm.dev/gpu'] === 'warm');
    stop.abort();
    await done;
    expect(api.node.metadata.labels ?? {}).toEqual({});
    expect(api.node.metadata.annotations ?? {}).toEqual({});
  });

  it('cleans up when the watch shows its deletionTimestamp', async () => {
    const { api } = await setup();
    await until(() => api.requests.some((r) => r.path.includes('watch=true')));
    api.setPod({ ...running(0), metadata: api.pod.metadata });
    await until(() => api.node.metadata.labels?.['prewarm.dev/gpu'] === 'warm');
    api.setPod({ ...api.pod, metadata: { ...api.pod.metadata, deletionTimestamp: new Date().toISOString() } });
    await until(() => api.node.metadata.labels?.['prewarm.dev/gpu'] === undefined);
    expect(api.node.metadata.annotations?.['status.prewarm.dev/gpu']).toBeUndefined();
  });

  it('rides out an apiserver outage with backoff', async () => {
    const { api, metrics } = await setup();
    await until(() => api.requests.some((r) => r.path.includes('watch=true')));
    api.failNext = 4;
    api.setPod({ ...running(0), metadata: api.pod.metadata });
    await until(() => api.node.metadata.labels?.['prewarm.dev/gpu'] === 'warm');
    expect(metrics.render()).toMatch(/prewarm_api_errors_total\{code="503",op="reconcile",pool="gpu"\} [1-9]/);
  });

  it('leaves the taint while another gating pool has not reported', async () => {
    const { api } = await setup({ pools: pools(pool('gpu'), pool('base', { tolerations: [{ key: 'other', operator: 'Exists' }] })) });
    await until(() => api.requests.some((r) => r.path.includes('watch=true')));
    api.setPod({ ...running(0), metadata: api.pod.metadata });
    await until(() => api.node.metadata.labels?.['prewarm.dev/gpu'] === 'warm');
    await until(() => api.events.length === 1);
    expect(api.node.spec?.taints?.map((t) => t.key)).toContain('prewarm.dev/warming');
    expect(api.events[0]?.reason).toBe(EventReason.Warm);
  });

  it('re-reads its pod after the watch expires (410) and keeps following it', async () => {
    const { api } = await setup();
    await until(() => api.requests.some((r) => r.path.includes('watch=true')));
    const gets = () => api.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/namespaces/prewarm/pods/pull-a-xyz').length;
    expect(gets()).toBe(1);
    api.expireWatches();
    await until(() => gets() === 2 && api.requests.filter((r) => r.path.includes('watch=true')).length === 2);
    api.setPod({ ...running(0), metadata: api.pod.metadata });
    await until(() => api.node.metadata.labels?.['prewarm.dev/gpu'] === 'warm');
  });

  it('wakes at its deadline without any pod event and fails open', async () => {
    // Node Ready 599.7 s ago with a 600 s deadline: the deadline passes 0.3 s after start.
    const { api } = await setup({ readyAgoMs: 599_700 });
    await until(() => api.requests.some((r) => r.path.includes('watch=true')));
    await sleep(50);
    expect(api.node.metadata.labels?.['prewarm.dev/gpu']).toBeUndefined();
    // Label, taint removal and Event are three requests, in that order: wait for the last one, then
    // check the whole end state exactly.
    await until(() => api.events.length >= 1, 3000);
    expect(api.node.metadata.labels?.['prewarm.dev/gpu']).toBe('partial');
    expect(api.node.spec?.taints?.map((t) => t.key)).toEqual(['other']);
    expect(api.events.map((e) => e.reason)).toEqual([EventReason.Partial]);
  });

  it('refresh: restarts only the container whose tag moved', async () => {
    const restarted: string[] = [];
    const registry: Registry = { digest: async (img) => (img === 'reg/b:1' ? digest('f') : digest('a')) };
    const restarter: Restarter = { restart: async (c) => (restarted.push(c), true) };
    const { api, ctl } = await setup({ registry, restarter });
    await until(() => api.requests.some((r) => r.path.includes('watch=true')));
    api.setPod({ ...running(0), metadata: api.pod.metadata });
    await until(() => ctl.latestPod?.status?.containerStatuses?.[0]?.state?.running !== undefined);
    await ctl.refreshOnce();
    expect(restarted).toEqual(['c2']);
    expect(api.events.some((e) => e.reason === EventReason.TagMoved)).toBe(true);
  });
});
