/**
 * The controller with its real HTTP adapters, in real time, against loopback apiservers that
 * misbehave: watches that end the moment they open, and a 410 on every watch; and against the fake
 * apiserver after its watch window moved past our pod, under the soak bench's fast clock. Without
 * a backoff the sidecar asks again in a tight loop (thousands of watches in a few seconds); with
 * it, a handful.
 */
import { describe, expect, it } from 'vitest';
import { FakeApiserver } from '../../harness/fake-apiserver.js';
import { startScriptedApiserver, type Script } from '../../harness/scripted-apiserver.js';
import { sleep } from '../../harness/time.js';
import { KubeHttp } from '../../src/http/client.js';
import { KubeEventSink, KubeNodePort, KubePodSource, KubePoolPodSource } from '../../src/reconciler/adapters/kube.js';
import { scaledClock, systemClock } from '../../src/reconciler/adapters/system.js';
import { Controller } from '../../src/reconciler/controller.js';
import { Metrics } from '../../src/reconciler/metrics.js';
import type { Logger } from '../../src/reconciler/ports.js';
import { IMAGES, SIDECAR, config, gate, node, pod, pool, pools, st } from './fixtures.js';

/** How long each scenario runs: the window of the figures the backoff is judged by. */
const WINDOW_MS = 6000;

/** A logger that keeps the warnings. */
function logger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info: () => undefined, warn: (m) => void warnings.push(m), error: () => undefined };
}

/** Answers our pod, the member list, the node and Events; every watch answers `watchBody`, then ends. */
function script(watchBody: string): Script {
  const cfg = config();
  const me = pod(IMAGES, [st.creating('c1'), st.creating('c2')]);
  const withRv = { ...me, metadata: { ...me.metadata, resourceVersion: '100' } };
  return (path) => {
    if (path.includes('watch=true')) return { status: 200, body: watchBody };
    if (path.startsWith(`/api/v1/namespaces/${cfg.podNamespace}/pods/`)) return { status: 200, body: withRv };
    if (path.startsWith(`/api/v1/namespaces/${cfg.podNamespace}/pods?`))
      return { status: 200, body: { kind: 'PodList', metadata: { resourceVersion: '100' }, items: [withRv] } };
    if (path.startsWith('/api/v1/nodes/')) return { status: 200, body: node({ taints: [gate] }) };
    if (path.includes('/events')) return { status: 201, body: {} };
    return undefined;
  };
}

/** Runs the sidecar's controller against `watchBody` for {@link WINDOW_MS}; returns what it asked. */
async function run(watchBody: string): Promise<{ watches: number; lists: number; warnings: string[]; metrics: string }> {
  const api = await startScriptedApiserver(script(watchBody));
  const http = new KubeHttp({ server: api.url });
  const cfg = config();
  const log = logger();
  const metrics = new Metrics();
  const ctl = new Controller(
    {
      pods: new KubePodSource(http, cfg.podNamespace, cfg.podName),
      poolPods: new KubePoolPodSource(http, cfg.podNamespace, cfg.poolId, cfg.nodeName, cfg.podName),
      nodes: new KubeNodePort(http, cfg.nodeName),
      events: new KubeEventSink(http, cfg, () => Date.now()),
      clock: systemClock,
      log,
      metrics,
    },
    cfg,
    pools(pool('gpu')),
    { sidecarName: SIDECAR },
  );
  const stop = new AbortController();
  const done = ctl.run(stop.signal);
  try {
    await sleep(WINDOW_MS);
  } finally {
    stop.abort();
    await done;
    http.close();
    await api.stop();
  }
  const watches = api.requests.filter((p) => p.includes('watch=true')).length;
  const lists = api.requests.filter((p) => /\/pods(\/[^?]+)?(\?(?!.*watch=true)|$)/.test(p)).length;
  return { watches, lists, warnings: log.warnings, metrics: metrics.render() };
}

describe('the watches against a server that ends them at once', () => {
  it.concurrent('a watch answered 200 that ends at once is opened again only after a backoff', async () => {
    const r = await run('');
    // Backoff from 1 s doubling (0.5-1, 1-2, 2-4 s): at most five watches of each kind in the window.
    expect(r.watches).toBeGreaterThanOrEqual(2);
    expect(r.watches).toBeLessThanOrEqual(10);
    expect(r.lists).toBe(2);
    expect(r.warnings.filter((w) => w.includes('restarting with backoff'))).toHaveLength(2);
    expect(r.metrics).toMatch(/prewarm_watch_restarts_total\{cause="short",pool="gpu",watch="pod"\} [1-5]\n/);
    expect(r.metrics).toMatch(/prewarm_watch_restarts_total\{cause="short",pool="gpu",watch="pool-pods"\} [1-5]\n/);
  });

  it.concurrent('a 410 on every watch is listed again only after a backoff', async () => {
    const expired = `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`;
    const r = await run(expired);
    expect(r.watches).toBeGreaterThanOrEqual(2);
    expect(r.watches).toBeLessThanOrEqual(10);
    expect(r.lists).toBeLessThanOrEqual(10);
    expect(r.warnings.filter((w) => w.includes('restarting with backoff'))).toHaveLength(2);
    expect(r.metrics).toMatch(/prewarm_watch_restarts_total\{cause="short",pool="gpu",watch="pod"\} [1-5]\n/);
  });
});

describe('the watches against the fake apiserver, under a clock 720 times the wall clock', () => {
  it.concurrent('after the watch window moves past our pod, a few requests follow, not a relist loop', async () => {
    const api = await new FakeApiserver(pod(IMAGES, [st.creating('c1'), st.creating('c2')]), node({ taints: [gate] })).start();
    const http = new KubeHttp({ server: api.url });
    const cfg = config();
    const ctl = new Controller(
      {
        pods: new KubePodSource(http, cfg.podNamespace, cfg.podName),
        poolPods: new KubePoolPodSource(http, cfg.podNamespace, cfg.poolId, cfg.nodeName, cfg.podName),
        nodes: new KubeNodePort(http, cfg.nodeName),
        events: new KubeEventSink(http, cfg, () => Date.now()),
        // The soak bench's clock: a loopback round trip of a few ms is seconds of its time.
        clock: scaledClock(720),
        log: logger(),
        metrics: new Metrics(),
      },
      cfg,
      pools(pool('gpu')),
      { sidecarName: SIDECAR },
    );
    const stop = new AbortController();
    const done = ctl.run(stop.signal);
    let after: number;
    try {
      await api.watching();
      await sleep(500);
      // As after a compaction: every version before now is gone, our pod's own included.
      api.expireWatches();
      const from = api.requests.length;
      await sleep(WINDOW_MS / 2); // 36 minutes of the sidecar's time
      after = api.requests.length - from;
    } finally {
      stop.abort();
      await done;
      http.close();
      await api.stop();
    }
    // Both watches listed again once and watching again, the node read on the resyncs and for the
    // lists' kicks: about a dozen. A relist loop makes hundreds.
    expect(after).toBeLessThanOrEqual(40);
  });
});
