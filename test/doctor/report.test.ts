/** The doctor report (src/doctor/report.ts): checks that could not run, the summary and the table. */
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/doctor/diagnose.js';
import type { ClusterRead, KubeletConfig } from '../../src/doctor/input.js';
import { Check, renderDoctorTable, summary } from '../../src/doctor/report.js';
import { GATE, ok, denied, node, input, find } from './fixtures.js';

describe('checks that could not run', () => {
  const failed: ClusterRead<never> = { kind: 'failed', message: 'HTTP 500: etcdserver: request timed out' };

  it('are counted as such, never as a pass, and the advice matches the failure: RBAC for 403, the apiserver for 5xx', () => {
    const r = diagnose(input({ version: failed, daemonSets: failed, pods: denied, nodes: failed }));
    expect(r.unchecked).toBe(r.findings.filter((f) => f.level === 'unknown').length);
    expect(r.unchecked).toBe(3);
    const version = find(r.findings, Check.apiserverVersion)[0];
    expect(version).toMatchObject({
      level: 'unknown',
      message: 'could not read /version: HTTP 500: etcdserver: request timed out; skipped',
    });
    expect(version?.fix).toContain('the apiserver failed to answer (not a permission problem)');
    for (const f of r.findings.filter((x) => x.level === 'unknown')) expect(f.fix).not.toMatch(/^grant/);
    const refused = diagnose(input({ nodes: denied }));
    expect(find(refused.findings, Check.kubeletConfig, 'cluster')[0]?.fix).toBe('grant list on nodes');
    expect(summary(r)).toBe('0 errors, 0 warnings, 3 checks could not run');
  });

  it("a node whose /configz failed gets its own row with the kubelet's advice; the other nodes are checked", () => {
    const kc = new Map<string, ClusterRead<KubeletConfig>>([
      ['n1', ok<KubeletConfig>({ serializeImagePulls: false, registerWithTaints: [{ key: GATE }] })],
      ['n2', { kind: 'failed', message: 'the answer is not JSON' }],
    ]);
    const r = diagnose(input({ nodes: ok([node('n1'), node('n2')]), kubeletConfigs: kc }));
    expect(find(r.findings, Check.kubeletConfig, 'node n2')[0]).toMatchObject({
      level: 'unknown',
      message: 'could not read the kubelet configuration (/configz): the answer is not JSON; skipped',
    });
    expect(find(r.findings, Check.kubeletConfig, 'node n2')[0]?.fix).toContain('the kubelet did not answer through the node proxy');
    expect(find(r.findings, Check.imageGc, 'node n1')[0]?.level).toBe('ok');
    expect(r.unchecked).toBe(1);
  });

  it('the table escapes what the cluster sent and ends with what could not run', () => {
    const hostile: ClusterRead<never> = { kind: 'failed', message: 'HTTP 500: \u001b[2J\u202e' };
    const nodes = ok([node('n1\u001b]0;x\u0007')]);
    const text = renderDoctorTable(diagnose(input({ nodes, kubeletConfigs: new Map([['n1\u001b]0;x\u0007', hostile]]) })), true);
    expect(text).toContain('node n1\\x1b]0;x\\x07');
    expect(text).toContain('HTTP 500: \\x1b[2J\\u202e');
    // eslint-disable-next-line no-control-regex -- the point: no raw control character in the table
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(text.endsWith('\n0 errors, 0 warnings, 1 check could not run\n')).toBe(true);
  });
});

describe('renderDoctorTable', () => {
  it('lists problems with their fixes and counts the rest; wide lists everything', () => {
    const r = diagnose(input({ policy: { kind: 'missing' } }));
    const text = renderDoctorTable(r, false);
    expect(text.split('\n')[0]).toMatch(/^LEVEL\s+SCOPE\s+CHECK\s+FINDING$/);
    expect(text).toContain('error   cluster   admission-policy   ValidatingAdmissionPolicy reconciler.prewarm.dev is not installed');
    expect(text).toContain('\nTo fix:\n  cluster admission-policy: apply prewarm-cluster.k8s.yaml');
    expect(text).toMatch(/\d+ checks passed or are informational \(-o wide lists them\)/);
    expect(text.endsWith('\n1 error, 0 warnings\n')).toBe(true);
    const wide = renderDoctorTable(r, true);
    expect(wide.split('\n').filter((l) => l.startsWith('ok ')).length).toBe(r.findings.filter((f) => f.level === 'ok').length);
  });
});
