/** diagnose(): every check over one cluster's reads, and what a refused read does to the rest. */
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/doctor/diagnose.js';
import { Check } from '../../src/doctor/report.js';
import { ok, denied, holder, input, find } from './fixtures.js';

describe('diagnose', () => {
  it('a healthy cluster: no errors, no warnings', () => {
    const r = diagnose(input());
    expect(r.findings.filter((f) => f.level !== 'ok' && f.level !== 'info')).toEqual([]);
    expect(r.errors).toBe(0);
    expect(find(r.findings, Check.apiserverVersion)[0]).toMatchObject({ level: 'ok', message: 'Kubernetes v1.36.5' });
  });

  it.each([
    ['29', 'error'],
    ['30+', 'ok'],
    ['31', 'ok'],
  ])('apiserver minor %s is %s (admissionregistration v1 and the node-name claim need 1.30)', (minor, level) => {
    const r = diagnose(input({ version: ok({ major: '1', minor, gitVersion: `v1.${minor}` }) }));
    expect(find(r.findings, Check.apiserverVersion)[0]?.level).toBe(level);
  });

  it('refused lists of DaemonSets, pods and nodes: unknown findings, never an error, and the rest goes on', () => {
    const r = diagnose(input({ daemonSets: denied, pods: denied, nodes: denied }));
    expect(r.errors).toBe(0);
    expect(
      r.findings
        .filter((f) => f.level === 'unknown')
        .map((f) => f.check)
        .sort(),
    ).toEqual([Check.kubeletConfig, Check.rollout]);
    expect(find(r.findings, Check.apiserverVersion)[0]?.level).toBe('ok');
    const noPods = diagnose(input({ pods: denied, daemonSets: ok(holder('gpu', { lanes: 3 })) }));
    // Which pools run on a node is read from the pods: no lane or taint verdicts without them.
    expect(find(noPods.findings, Check.imagePulls, 'node n1')[0]).toMatchObject({
      level: 'info',
      message: 'parallel pulls (maxParallelImagePulls: unlimited); the pools on this node are unknown (pods not readable)',
    });
    expect(find(noPods.findings, Check.registerTaint)).toEqual([]);
    expect(find(noPods.findings, Check.podSlots, 'cluster')[0]?.message).toBe(
      'not allowed to read pods in every namespace (403: forbidden); skipped: no pod slot, gate or sidecar checks',
    );
  });
});
