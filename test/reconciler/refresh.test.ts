import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcRestarter } from '../../src/reconciler/adapters/proc.js';
import { isDigestPinned, refreshCandidates, refreshDelayMs } from '../../src/reconciler/refresh.js';
import { SIDECAR, digest, pod, st } from './fixtures.js';

describe('refreshCandidates', () => {
  it('checks only tagged images under imagePullPolicy Always that report a repo digest', () => {
    const p = pod(['reg/a:1', `reg/b@${digest('b')}`, 'reg/c:1', 'reg/d:1'], [st.running('c1', 'reg/a:1', 1, 'a'), st.running('c2', 'reg/b', 1, 'b'), { ...st.running('c3', 'reg/c:1'), imageID: `sha256:${'c'.repeat(64)}` }, st.creating('c4')]);
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
