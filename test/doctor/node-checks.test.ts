/** The checks of each node (src/doctor/node-checks.ts): its kubelet's pulls, taints, pod slots, image GC, the gate and the sidecar. */
import { describe, expect, it } from 'vitest';
import { LABEL_MANAGED_BY, LABEL_PULLER } from '../../src/contract/names.js';
import { diagnose } from '../../src/doctor/diagnose.js';
import type { KubeletConfig } from '../../src/doctor/input.js';
import { Check } from '../../src/doctor/report.js';
import type { Pod } from '../../src/contract/pod-status.js';
import { ABSOLUTE_GRACE_SECONDS } from '../../src/contract/gate-key.js';
import { GATE, ok, denied, holder, holderPod, node, input, find } from './fixtures.js';

describe('node checks', () => {
  it('lanes on a kubelet that serializes pulls: a warning that says so and how to fix it', () => {
    const serial = ok<KubeletConfig>({ serializeImagePulls: true, registerWithTaints: [{ key: GATE }] });
    const r = diagnose(input({ daemonSets: ok(holder('gpu', { lanes: 3 })), kubeletConfigs: new Map([['n1', serial]]) }));
    const f = find(r.findings, Check.imagePulls, 'node n1')[0];
    expect(f?.level).toBe('warning');
    expect(f?.message).toBe(
      'serializeImagePulls: true (one pull at a time): pool gpu has 3 lanes, which here overlap container starts with pulls but never pull in parallel',
    );
    expect(f?.fix).toContain('serializeImagePulls: false');
  });

  it('lanes on a parallel kubelet: ok, unless maxParallelImagePulls is below the lanes; the default is serial', () => {
    const with3 = (kc: KubeletConfig) =>
      find(
        diagnose(input({ daemonSets: ok(holder('gpu', { lanes: 3 })), kubeletConfigs: new Map([['n1', ok(kc)]]) })).findings,
        Check.imagePulls,
      )[0];
    expect(with3({ serializeImagePulls: false })).toMatchObject({
      level: 'ok',
      message: expect.stringContaining('maxParallelImagePulls: unlimited') as string,
    });
    expect(with3({ serializeImagePulls: false, maxParallelImagePulls: 2 })).toMatchObject({ level: 'warning' });
    expect(with3({})?.level).toBe('warning');
    // Without lanes, serial pulls are only information.
    expect(find(diagnose(input({ kubeletConfigs: new Map([['n1', ok<KubeletConfig>({})]]) })).findings, Check.imagePulls)[0]?.level).toBe(
      'info',
    );
  });

  it('a refused /configz is reported as such and the other node checks go on', () => {
    const r = diagnose(input({ kubeletConfigs: new Map([['n1', denied]]) }));
    const f = find(r.findings, Check.kubeletConfig, 'node n1')[0];
    expect(f).toMatchObject({ level: 'unknown', fix: 'grant get on nodes/proxy to read /api/v1/nodes/NAME/proxy/configz' });
    expect(f?.message).toBe('not allowed to read the kubelet configuration (/configz) (403: forbidden); skipped');
    expect(find(r.findings, Check.podSlots, 'node n1')[0]?.level).toBe('ok');
    expect(find(r.findings, Check.imagePulls)).toEqual([]);
    expect(r.errors).toBe(0);
  });

  it('registerWithTaints without the gating taint is a warning naming the key', () => {
    const r = diagnose(
      input({ kubeletConfigs: new Map([['n1', ok<KubeletConfig>({ serializeImagePulls: false, registerWithTaints: [] })]]) }),
    );
    const f = find(r.findings, Check.registerTaint, 'node n1')[0];
    expect(f?.level).toBe('warning');
    expect(f?.fix).toBe(
      `add {key: ${GATE}, effect: NoSchedule} to registerWithTaints (--register-with-taints=${GATE}:NoSchedule), e.g. in the node group's taints`,
    );
  });

  it('pod slots: the burst pullers of the pools here must fit under maxPods', () => {
    const many = Array.from({ length: 9 }, (_, i) => ({ metadata: { name: `w${i}`, namespace: 'app' }, spec: { nodeName: 'n1' } }));
    const kc = ok<KubeletConfig>({ serializeImagePulls: false, maxPods: 11, registerWithTaints: [{ key: GATE }] });
    const tight = diagnose(
      input({
        daemonSets: ok(holder('gpu', { lanes: 4 })),
        pods: ok([holderPod('gpu', 'n1'), ...many]),
        kubeletConfigs: new Map([['n1', kc]]),
      }),
    );
    const f = find(tight.findings, Check.podSlots, 'node n1')[0];
    expect(f?.level).toBe('warning');
    expect(f?.message).toContain('10 of 11 pod slots used: the burst pullers need 4 more');
    const roomy = diagnose(
      input({
        daemonSets: ok(holder('gpu', { lanes: 2 })),
        pods: ok([holderPod('gpu', 'n1'), ...many.slice(1)]),
        kubeletConfigs: new Map([['n1', kc]]),
      }),
    );
    expect(find(roomy.findings, Check.podSlots, 'node n1')[0]?.message).toBe(
      '9 of 11 pod slots used; room for the 2 burst pullers of a warm-up',
    );
    // A puller already on the node holds its own slot: it is counted as used, not needed again.
    const puller: Pod = {
      metadata: { name: 'p1', namespace: 'prewarm', labels: { [LABEL_MANAGED_BY]: 'prewarm', [LABEL_PULLER]: 'gpu-1' } },
      spec: { nodeName: 'n1' },
    };
    const full = Array.from({ length: 8 }, (_, i) => ({ metadata: { name: `w${i}`, namespace: 'app' }, spec: { nodeName: 'n1' } }));
    const warming = diagnose(
      input({
        daemonSets: ok(holder('gpu', { lanes: 2 })),
        pods: ok([holderPod('gpu', 'n1'), puller, ...full]),
        kubeletConfigs: new Map([['n1', kc]]),
      }),
    );
    expect(find(warming.findings, Check.podSlots, 'node n1')[0]).toMatchObject({
      level: 'ok',
      message: '10 of 11 pod slots used; room for the 2 burst pullers of a warm-up',
    });
  });

  it('pod slots: a one-image pool with lanes > 1 has one puller, and its slot is counted', () => {
    const kc = ok<KubeletConfig>({ serializeImagePulls: false, maxPods: 2, registerWithTaints: [{ key: GATE }] });
    const r = diagnose(
      input({
        daemonSets: ok(holder('gpu', { lanes: 4, pullers: 1 })),
        pods: ok([holderPod('gpu', 'n1'), { metadata: { name: 'w', namespace: 'app' }, spec: { nodeName: 'n1' } }]),
        kubeletConfigs: new Map([['n1', kc]]),
      }),
    );
    expect(find(r.findings, Check.podSlots, 'node n1')[0]?.message).toContain('2 of 2 pod slots used: the burst pullers need 1 more');
  });

  it('image GC: a warning when images already pass the high threshold of the disk', () => {
    const kc = new Map([
      ['n1', ok<KubeletConfig>({ serializeImagePulls: false, imageGCHighThresholdPercent: 50, registerWithTaints: [{ key: GATE }] })],
    ]);
    const full = diagnose(input({ nodes: ok([node('n1', { disk: '10Gi', imageBytes: 6 * 2 ** 30 })]), kubeletConfigs: kc }));
    expect(find(full.findings, Check.imageGc)[0]).toMatchObject({ level: 'warning' });
    expect(find(full.findings, Check.imageGc)[0]?.message).toContain('images take at least 6.0 GiB of 10.0 GiB');
    const fine = diagnose(input({ nodes: ok([node('n1', { disk: '10Gi', imageBytes: 4 * 2 ** 30 })]), kubeletConfigs: kc }));
    expect(find(fine.findings, Check.imageGc)[0]?.level).toBe('ok');
  });

  it('a gating taint past created + longest deadline + the absolute grace is an error; before it, information', () => {
    const bound = 120 + ABSOLUTE_GRACE_SECONDS;
    const at = (createdAgoS: number) =>
      find(
        diagnose(input({ daemonSets: ok(holder('gpu', { deadline: 120 })), nodes: ok([node('n1', { taints: [GATE], createdAgoS })]) }))
          .findings,
        Check.gateTaint,
      )[0];
    expect(at(bound + 30)).toMatchObject({ level: 'error' });
    expect(at(bound + 30)?.message).toContain(`30s past its absolute bound (created + 120s deadline + ${ABSOLUTE_GRACE_SECONDS}s grace)`);
    expect(at(bound - 30)).toMatchObject({
      level: 'info',
      message: `gating taint ${GATE} is on the node; the sidecars remove it at the latest in 30s`,
    });
  });

  it('a sidecar that runs is reported running, ready or still holding its startup probe back (a warming node)', () => {
    for (const sidecar of ['running', 'held'] as const) {
      const r = diagnose(input({ pods: ok([holderPod('gpu', 'n1', sidecar)]) }));
      expect(find(r.findings, Check.reconcilerImage, 'node n1'), sidecar).toEqual([
        expect.objectContaining({ level: 'ok', message: 'reconciler running in prewarm/prewarm-gpu-n1' }),
      ]);
    }
  });

  it('the reconciler image failing to pull on a node is an error naming the node and reason', () => {
    const r = diagnose(input({ pods: ok([holderPod('gpu', 'n1', 'ErrImagePull')]) }));
    const f = find(r.findings, Check.reconcilerImage, 'node n1')[0];
    expect(f?.level).toBe('error');
    expect(f?.message).toContain(
      'the reconciler image ghcr.io/prewarm-dev/reconciler:0.1.0 cannot be pulled here (prewarm/prewarm-gpu-n1: ErrImagePull: not found)',
    );
  });
});
