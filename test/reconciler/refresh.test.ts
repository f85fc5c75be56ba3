import { describe, expect, it } from 'vitest';
import type { KPod } from '../../src/reconciler/kube-types.js';
import { Metrics } from '../../src/reconciler/metrics.js';
import type { Registry } from '../../src/reconciler/ports.js';
import { EventReason, type EventIntent } from '../../src/contract/events.js';
import { Refresher, isDigestPinned, refreshCandidates, refreshDelayMs } from '../../src/reconciler/refresh.js';
import { tagOf } from '../../src/reconciler/observe.js';
import { FakeClock } from './fake-clock.js';
import { SIDECAR, T0, digest, pod, st } from './fixtures.js';

describe('refreshCandidates', () => {
  it('checks only tagged images under imagePullPolicy Always that report a repo digest', () => {
    const p = pod(
      ['reg/a:1', `reg/b@${digest('b')}`, 'reg/c:1', 'reg/d:1'],
      [
        st.running('c1', 'reg/a:1', 1, 'a'),
        st.running('c2', 'reg/b', 1, 'b'),
        { ...st.running('c3', 'reg/c:1'), imageID: `sha256:${'c'.repeat(64)}` },
        st.creating('c4'),
      ],
    );
    const { candidates, skipped } = refreshCandidates(p, SIDECAR);
    expect(candidates).toEqual([{ container: 'c1', image: 'reg/a:1', running: digest('a') }]);
    expect(skipped).toEqual(['c3', 'c4']);
  });
  it('skips IfNotPresent containers: a restart would not re-pull and would loop', () => {
    const p = pod(['reg/a:1'], [st.running('c1', 'reg/a:1')]);
    const q = { ...p, spec: { ...p.spec, containers: [{ name: 'c1', image: 'reg/a:1', imagePullPolicy: 'IfNotPresent' }] } };
    expect(refreshCandidates(q, SIDECAR)).toEqual({ candidates: [], skipped: ['c1'] });
  });
  it('checks the tag again once the sidecar pinned it to a digest, and knows which digest it asked for', () => {
    const p = pod([`reg/a:1@${digest('f')}`], [st.running('c1', 'reg/a:1', 1, 'a')]);
    const q = { ...p, spec: { ...p.spec, containers: [{ name: 'c1', image: `reg/a:1@${digest('f')}`, imagePullPolicy: 'Always' }] } };
    expect(refreshCandidates(q, SIDECAR)).toEqual({
      candidates: [{ container: 'c1', image: 'reg/a:1', running: digest('a'), requested: digest('f') }],
      skipped: [],
    });
  });
  it('reads the tag of a reference, with or without a digest, and none of a bare repository', () => {
    expect(tagOf('reg:5000/a/b:1')).toBe('reg:5000/a/b:1');
    expect(tagOf(`reg:5000/a/b:1@${digest('a')}`)).toBe('reg:5000/a/b:1');
    expect(tagOf(`reg:5000/a/b@${digest('a')}`)).toBeUndefined();
    expect(tagOf('reg:5000/a/b')).toBeUndefined();
  });
  it('jitters the interval by up to 20%', () => {
    expect(refreshDelayMs(100, 0)).toBe(100_000);
    expect(refreshDelayMs(100, 0.999)).toBeLessThanOrEqual(120_000);
    expect(isDigestPinned(`a@${digest('a')}`)).toBe(true);
  });
});

/** A Refresher of pool gpu every 100 s over `current`, whose tag `reg/b:1` moved to digest f. */
function refresher(current: () => KPod | undefined, over: { registry?: Registry; refuse?: string } = {}) {
  const clock = new FakeClock(T0);
  const checked: string[] = [];
  const restarted: string[] = [];
  const reported: EventIntent[] = [];
  const warnings: string[] = [];
  const metrics = new Metrics();
  const registry: Registry = over.registry ?? {
    digest: (img) => (checked.push(img), Promise.resolve(img === 'reg/b:1' ? digest('f') : digest('a'))),
  };
  const r = new Refresher(
    {
      registry,
      restarter: {
        restart: (c, image) => {
          restarted.push(`${c}=${image}`);
          return over.refuse === undefined ? Promise.resolve() : Promise.reject(new Error(over.refuse));
        },
      },
      clock,
      log: { info: () => {}, warn: (m) => void warnings.push(m), error: () => {} },
      metrics,
      report: (e) => (reported.push(e), Promise.resolve()),
      pod: current,
    },
    'gpu',
    100,
    SIDECAR,
  );
  return { r, clock, checked, restarted, reported, warnings, metrics };
}

const both = (): KPod => pod(['reg/a:1', 'reg/b:1'], [st.running('c1', 'reg/a:1', 1, 'a'), st.running('c2', 'reg/b:1', 1, 'b')]);

describe('Refresher', () => {
  it('restarts only the container whose tag moved, and reports it', async () => {
    const { r, restarted, reported, metrics } = refresher(both);
    await r.once();
    expect(restarted).toEqual([`c2=reg/b:1@${digest('f')}`]);
    expect(reported).toEqual([
      {
        reason: EventReason.TagMoved,
        message: `pool gpu: reg/b:1 moved from ${digest('b')} to ${digest('f')}; set container c2 to reg/b:1@${digest('f')} to pull it`,
      },
    ]);
    expect(metrics.render()).toContain('prewarm_refresh_checks_total{outcome="moved",pool="gpu"} 1');
    expect(metrics.render()).toContain('prewarm_refresh_checks_total{outcome="unchanged",pool="gpu"} 1');
  });

  it('reports a refused restart once per digest, warns and counts it on every pass, and counts registry errors', async () => {
    const failing: Registry = { digest: async (img) => (img === 'reg/a:1' ? Promise.reject(new Error('down')) : digest('f')) };
    const { r, reported, restarted, metrics, warnings } = refresher(both, { registry: failing, refuse: '403 Forbidden' });
    await r.once();
    await r.once();
    expect(restarted).toEqual([`c2=reg/b:1@${digest('f')}`, `c2=reg/b:1@${digest('f')}`]);
    expect(reported).toEqual([
      {
        reason: EventReason.TagRefreshFailed,
        message: `pool gpu: reg/b:1 moved to ${digest('f')}, but container c2 could not be set to it: 403 Forbidden`,
      },
    ]);
    expect(warnings.filter((w) => w === 'could not set the image of a container whose tag moved')).toHaveLength(2);
    expect(metrics.render()).toContain('prewarm_refresh_checks_total{outcome="restart-failed",pool="gpu"} 2');
    expect(metrics.render()).toContain('prewarm_refresh_checks_total{outcome="error",pool="gpu"} 2');
  });

  it('quotes the refusal escaped and bounded', async () => {
    const { r, reported } = refresher(both, { refuse: `denied\u001b[31m${'x'.repeat(2000)}` });
    await r.once();
    const message = reported[0]?.message ?? '';
    expect(message).not.toContain('\u001b');
    expect(message).toContain('denied\\x1b[31m');
    expect(message.length).toBeLessThan(600);
  });

  it('asks once for a digest: a container already set to it is left to the kubelet', async () => {
    const pinned = (): KPod => {
      const p = both();
      const containers = (p.spec?.containers ?? []).map((c) => (c.name === 'c2' ? { ...c, image: `reg/b:1@${digest('f')}` } : c));
      return { ...p, spec: { ...p.spec, containers } };
    };
    const { r, restarted, reported } = refresher(pinned);
    await r.once();
    expect(restarted).toEqual([]);
    expect(reported).toEqual([]);
  });

  it('warns once about containers it must skip, and counts them on every pass', async () => {
    const p = pod(['reg/a:1'], [st.creating('c1')]);
    const { r, warnings, metrics } = refresher(() => p);
    await r.once();
    await r.once();
    expect(warnings).toHaveLength(1);
    expect(metrics.render()).toContain('prewarm_refresh_checks_total{outcome="skipped",pool="gpu"} 2');
  });

  it('passes once per jittered interval, the first one interval after start, until aborted', async () => {
    const { r, clock, checked } = refresher(both);
    const stop = new AbortController();
    const done = r.run(stop.signal);
    const interval = refreshDelayMs(100, 0.5);
    await clock.advance(interval - 1);
    expect(checked).toEqual([]);
    await clock.advance(1);
    expect(checked).toEqual(['reg/a:1', 'reg/b:1']);
    await clock.advance(interval);
    expect(checked).toHaveLength(4);
    stop.abort();
    await clock.runUntil(done);
    expect(clock.pending).toEqual([]);
  });

  it('skips a pass while there is no pod yet', async () => {
    let current: KPod | undefined = undefined;
    const { r, clock, checked } = refresher(() => current);
    const stop = new AbortController();
    const done = r.run(stop.signal);
    await clock.advance(refreshDelayMs(100, 0.5));
    expect(checked).toEqual([]);
    current = both();
    await clock.advance(refreshDelayMs(100, 0.5));
    expect(checked).toEqual(['reg/a:1', 'reg/b:1']);
    stop.abort();
    await clock.runUntil(done);
  });
});
