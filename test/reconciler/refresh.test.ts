import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcRestarter } from '../../src/reconciler/adapters/proc.js';
import type { KPod } from '../../src/reconciler/kube-types.js';
import { Metrics } from '../../src/reconciler/metrics.js';
import type { Registry } from '../../src/reconciler/ports.js';
import { EventReason, type EventIntent } from '../../src/reconciler/reasons.js';
import { Refresher, isDigestPinned, refreshCandidates, refreshDelayMs } from '../../src/reconciler/refresh.js';
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
  it('jitters the interval by up to 20%', () => {
    expect(refreshDelayMs(100, 0)).toBe(100_000);
    expect(refreshDelayMs(100, 0.999)).toBeLessThanOrEqual(120_000);
    expect(isDigestPinned(`a@${digest('a')}`)).toBe(true);
  });
});

/** A Refresher of pool gpu every 100 s over `current`, whose tag `reg/b:1` moved to digest f. */
function refresher(current: () => KPod | undefined, over: { registry?: Registry; restart?: boolean } = {}) {
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
      restarter: { restart: (c) => (restarted.push(c), Promise.resolve(over.restart ?? true)) },
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
    expect(restarted).toEqual(['c2']);
    expect(reported).toEqual([
      {
        reason: EventReason.TagMoved,
        message: `pool gpu: reg/b:1 moved from ${digest('b')} to ${digest('f')}; restarted container c2 to pull it`,
      },
    ]);
    expect(metrics.render()).toContain('prewarm_refresh_checks_total{outcome="moved",pool="gpu"} 1');
    expect(metrics.render()).toContain('prewarm_refresh_checks_total{outcome="unchanged",pool="gpu"} 1');
  });

  it('reports nothing when the container could not be restarted, and counts registry errors', async () => {
    const failing: Registry = { digest: async (img) => (img === 'reg/a:1' ? Promise.reject(new Error('down')) : digest('f')) };
    const { r, reported, metrics } = refresher(both, { registry: failing, restart: false });
    await r.once();
    expect(reported).toEqual([]);
    expect(metrics.render()).toContain('prewarm_refresh_checks_total{outcome="error",pool="gpu"} 1');
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

describe('ProcRestarter', () => {
  it('kills exactly the processes whose environment names the container', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prewarm-proc-'));
    try {
      const mk = (pid: string, env: string[]): void => {
        fs.mkdirSync(path.join(dir, pid));
        fs.writeFileSync(path.join(dir, pid, 'environ'), `${env.join('\0')}\0`);
      };
      mk('10', ['PATH=/bin', 'PREWARM_IMAGE_CONTAINER=c1']);
      mk('11', ['PREWARM_IMAGE_CONTAINER=c10']);
      mk('12', ['PREWARM_IMAGE_CONTAINER=c2']);
      fs.mkdirSync(path.join(dir, 'self'));
      const killed: [number, string][] = [];
      const r = new ProcRestarter(dir, (pid, sig) => void killed.push([pid, sig]));
      expect(await r.restart('c1')).toBe(true);
      expect(killed).toEqual([[10, 'SIGKILL']]);
      expect(await r.restart('missing')).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
