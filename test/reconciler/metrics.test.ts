import { describe, expect, it } from 'vitest';
import { serveMetrics } from '../../src/reconciler/adapters/system.js';
import { Metrics } from '../../src/reconciler/metrics.js';
import { STARTUP_PATH } from '../../src/contract/names.js';

describe('Metrics exposition', () => {
  it('renders the text format: HELP/TYPE, sorted labels, histogram buckets, sum and count', () => {
    const m = new Metrics();
    m.timeToWarm.observe({ pool: 'gpu' }, 42);
    m.timeToWarm.observe({ pool: 'gpu' }, 0.5);
    m.warm.set({ pool: 'gpu' }, 1);
    m.imagesFailing.inc({ reason: 'ErrImagePull', pool: 'gpu' });
    m.imagesFailing.inc({ pool: 'gpu', reason: 'ErrImagePull' });
    const text = m.render();
    expect(text).toContain('# TYPE prewarm_time_to_warm_seconds histogram');
    expect(text).toContain('prewarm_time_to_warm_seconds_bucket{pool="gpu",le="1"} 1');
    expect(text).toContain('prewarm_time_to_warm_seconds_bucket{pool="gpu",le="30"} 1');
    expect(text).toContain('prewarm_time_to_warm_seconds_bucket{pool="gpu",le="60"} 2');
    expect(text).toContain('prewarm_time_to_warm_seconds_bucket{pool="gpu",le="+Inf"} 2');
    expect(text).toContain('prewarm_time_to_warm_seconds_sum{pool="gpu"} 42.5');
    expect(text).toContain('prewarm_time_to_warm_seconds_count{pool="gpu"} 2');
    expect(text).toContain('# TYPE prewarm_pool_warm gauge\nprewarm_pool_warm{pool="gpu"} 1');
    // Same series regardless of label order.
    expect(text).toContain('prewarm_images_failing{pool="gpu",reason="ErrImagePull"} 2');
    expect(text.endsWith('\n')).toBe(true);
  });

  it('escapes label values and clears stale series', () => {
    const m = new Metrics();
    m.imagesFailing.set({ pool: 'a"b\\c\nd', reason: 'X' }, 1);
    expect(m.render()).toContain('prewarm_images_failing{pool="a\\"b\\\\c\\nd",reason="X"} 1');
    m.imagesFailing.clear({ pool: 'a"b\\c\nd' });
    expect(m.render()).not.toContain('prewarm_images_failing{');
  });

  it('every line is a comment or a valid sample', () => {
    const m = new Metrics();
    m.timeToWarm.observe({ pool: 'p' }, 3);
    m.gateOpened.inc({ pool: 'p', outcome: 'ready' });
    for (const line of m.render().trimEnd().split('\n')) {
      expect(line).toMatch(/^(# (HELP|TYPE) [a-z_]+ .+|[a-z_]+(\{([a-z_]+="[^"]*",?)*\})? (-?[0-9.e+]+|\+Inf|NaN))$/);
    }
  });

  it('serves /metrics and /healthz on loopback', async () => {
    const m = new Metrics();
    m.warm.set({ pool: 'gpu' }, 1);
    const { server, port } = await serveMetrics(m, '127.0.0.1', 0);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(await r.text()).toContain('prewarm_pool_warm{pool="gpu"} 1');
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/nope`)).status).toBe(404);
    } finally {
      server.close();
    }
  });

  it('answers the startup probe as it is told: 503 until the image containers may start, 200 from then on', async () => {
    let released = false;
    const { server, port } = await serveMetrics(new Metrics(), '127.0.0.1', 0, () => released);
    try {
      const held = await fetch(`http://127.0.0.1:${port}${STARTUP_PATH}`);
      expect([held.status, await held.text()]).toEqual([503, 'warming\n']);
      released = true;
      const ok = await fetch(`http://127.0.0.1:${port}${STARTUP_PATH}`);
      expect([ok.status, await ok.text()]).toEqual([200, 'ok\n']);
    } finally {
      server.close();
    }
  });
});
