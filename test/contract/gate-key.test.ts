import { describe, expect, it } from 'vitest';
import {
  gateKeyAllowanceError,
  gateKeyRefusal,
  isKubernetesNodeTaint,
  isQualifiedKey,
  reservedDomainOf,
  toleratesGateTaint,
} from '../../src/contract/gate-key.js';
import { TOLERATE_ALL, type Toleration } from '../../src/contract/placement.js';

const CA = 'startup-taint.cluster-autoscaler.kubernetes.io/';

describe('gateKeyRefusal: who may choose a gate key', () => {
  it.each([
    ['the default key', 'prewarm.dev/warming'],
    ['another key under prewarm.dev/', 'prewarm.dev/gpu-cold'],
  ])('a spec may use %s with no allowance', (_case, key) => {
    expect(gateKeyRefusal(key, [], [])).toBeUndefined();
  });

  it.each([
    ['kubernetes.io/', 'kubernetes.io/x', 'is under kubernetes.io, reserved for Kubernetes'],
    ['k8s.io/', 'k8s.io/x', 'is under k8s.io, reserved for Kubernetes'],
    ['a subdomain of k8s.io', 'a.b.k8s.io/x', 'is under k8s.io, reserved for Kubernetes'],
    ["the cluster autoscaler's prefix", `${CA}prewarm`, 'is under kubernetes.io, reserved for Kubernetes'],
    ['karpenter.sh/', 'karpenter.sh/disrupted', 'is under karpenter.sh, reserved for Karpenter'],
    ['a subdomain of karpenter.sh', 'x.karpenter.sh/y', 'is under karpenter.sh, reserved for Karpenter'],
    ['a GPU taint', 'nvidia.com/gpu', 'is outside prewarm.dev/, the only keys a spec may choose on its own'],
    ['a key without a prefix', 'dedicated', 'is outside prewarm.dev/'],
    ['a subdomain of prewarm.dev', 'status.prewarm.dev/x', 'is outside prewarm.dev/'],
    ['a look-alike of prewarm.dev', 'prewarm.dev.evil.example/warming', 'is outside prewarm.dev/'],
  ])('without an allowance, %s is refused and the message names the flag', (_case, key, why) => {
    const refusal = gateKeyRefusal(key, [], []);
    expect(refusal).toContain(`gate taint key "${key}" ${why}`);
    expect(refusal).toContain(`--allow-gate-key ${key}`);
  });

  it.each([
    ['node.kubernetes.io/not-ready'],
    ['node.kubernetes.io/unschedulable'],
    ['node-role.kubernetes.io/control-plane'],
    ['node.cloudprovider.kubernetes.io/uninitialized'],
    ['a.node.kubernetes.io/x'],
  ])("Kubernetes' own node taint %s is refused even when allowed", (key) => {
    const allowed = [key, `${key.split('/')[0] ?? ''}/`, 'kubernetes.io/'];
    expect(gateKeyRefusal(key, [], allowed)).toBe(
      `gate taint key "${key}" is a taint that Kubernetes itself sets and lifts; prewarm never removes it, whatever --allow-gate-key says`,
    );
  });

  it('an allowance admits an exact key, or the keys starting with a prefix, and nothing else', () => {
    expect(gateKeyRefusal('example.com/cold', [], ['example.com/cold'])).toBeUndefined();
    expect(gateKeyRefusal('example.com/colder', [], ['example.com/cold'])).toContain('is outside prewarm.dev/');
    expect(gateKeyRefusal('example.com/any', [], ['example.com/'])).toBeUndefined();
    // A prefix is a string prefix ending in "/": it never reaches into subdomains.
    expect(gateKeyRefusal('gpu.example.com/x', [], ['example.com/'])).toContain('is outside prewarm.dev/');
    expect(gateKeyRefusal('node-role.kubernetes.io/control-plane', [], ['kubernetes.io/'])).toContain('Kubernetes itself sets');
    expect(gateKeyRefusal('dedicated', [], ['dedicated'])).toBeUndefined();
  });

  it("the cluster autoscaler's start-up prefix can be allowed", () => {
    expect(gateKeyRefusal(`${CA}prewarm`, [], [CA])).toBeUndefined();
    expect(gateKeyRefusal(`${CA}prewarm`, [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }], [CA])).toBeUndefined();
  });

  describe("always refused, even when allowed: a key the pool's own tolerations tolerate", () => {
    const key = 'nvidia.com/gpu';
    const allowed = ['nvidia.com/'];
    it.each<[string, Toleration, string]>([
      ['Exists on the key, no effect', { key, operator: 'Exists' }, 'tolerates nvidia.com/gpu (operator Exists)'],
      ['Exists on the key, NoSchedule', { key, operator: 'Exists', effect: 'NoSchedule' }, 'tolerates nvidia.com/gpu:NoSchedule'],
      ['Equal with a value', { key, operator: 'Equal', value: 'true' }, 'tolerates nvidia.com/gpu=true (operator Equal)'],
      ['Equal with a value, NoSchedule', { key, operator: 'Equal', value: 'a100', effect: 'NoSchedule' }, 'nvidia.com/gpu=a100:NoSchedule'],
      ['Equal with an empty value', { key, operator: 'Equal' }, 'tolerates nvidia.com/gpu= (operator Equal)'],
      ['a keyless Exists', { operator: 'Exists' }, 'tolerates every taint'],
      ['a keyless Exists, NoSchedule', { operator: 'Exists', effect: 'NoSchedule' }, 'tolerates every taint'],
    ])('%s', (_case, toleration, says) => {
      const refusal = gateKeyRefusal(key, [toleration], allowed);
      expect(refusal).toContain(says);
      expect(refusal).toContain('lifting it would open those nodes to every workload');
    });

    it.each<[string, Toleration]>([
      ['another effect on the key (NoExecute)', { key, operator: 'Exists', effect: 'NoExecute' }],
      ['another effect on the key (PreferNoSchedule)', { key, operator: 'Equal', value: 'x', effect: 'PreferNoSchedule' }],
      ['a keyless Exists of another effect', { operator: 'Exists', effect: 'NoExecute' }],
      ['another key', { key: 'nvidia.com/gpu-type', operator: 'Exists' }],
    ])('not tolerated, so allowed: %s', (_case, toleration) => {
      expect(gateKeyRefusal(key, [toleration], allowed)).toBeUndefined();
    });
  });

  it('kube-fledged input tolerates every taint: its default prewarm.dev/ gate stays, and no other key is possible', () => {
    expect(gateKeyRefusal('prewarm.dev/warming', TOLERATE_ALL, [])).toBeUndefined();
    expect(gateKeyRefusal(`${CA}prewarm`, TOLERATE_ALL, [CA])).toContain('tolerates every taint');
  });

  it('a prewarm.dev/ key its own tolerations name is harmless and accepted: the gate toleration is the same', () => {
    expect(gateKeyRefusal('prewarm.dev/warming', [{ key: 'prewarm.dev/warming', operator: 'Exists' }], [])).toBeUndefined();
  });

  it('refuses a key that is not a taint key at all', () => {
    expect(gateKeyRefusal('a/b/c', [], ['a/'])).toBe('gate taint key "a/b/c" is not a valid taint key');
  });
});

describe('toleratesGateTaint (core/v1 ToleratesTaint on key:NoSchedule, any value)', () => {
  it.each<[Toleration, boolean]>([
    [{ operator: 'Exists' }, true],
    [{ key: '', operator: 'Exists' }, true],
    [{ key: 'k', operator: 'Exists' }, true],
    [{ key: 'k', operator: 'Equal', value: 'v' }, true],
    [{ key: 'k', operator: 'Exists', effect: 'NoSchedule' }, true],
    [{ key: 'k', operator: 'Exists', effect: 'NoExecute' }, false],
    [{ key: 'k', operator: 'Exists', effect: 'PreferNoSchedule' }, false],
    [{ key: 'other', operator: 'Exists' }, false],
  ])('%j → %s', (t, expected) => {
    expect(toleratesGateTaint(t, 'k')).toBe(expected);
  });
});

describe('allowances', () => {
  it.each([['example.com/cold'], ['example.com/'], [CA], ['kubernetes.io/'], ['karpenter.sh/'], ['dedicated']])('%s is usable', (a) => {
    expect(gateKeyAllowanceError(a)).toBeUndefined();
  });
  it.each([[''], ['/'], ['Example.com/'], ['a/b/c'], ['example.com//'], ['-x']])('%j is not an allowance', (a) => {
    expect(gateKeyAllowanceError(a)).toContain('is neither a taint key');
  });
  it.each([['node.kubernetes.io/'], ['node-role.kubernetes.io/control-plane'], ['node.cloudprovider.kubernetes.io/']])(
    '%s can never be allowed',
    (a) => {
      expect(gateKeyAllowanceError(a)).toContain('names taints that Kubernetes itself sets and lifts');
    },
  );
});

describe('key helpers', () => {
  it('reservedDomainOf, isKubernetesNodeTaint, isQualifiedKey', () => {
    expect(reservedDomainOf('node-role.kubernetes.io/control-plane')).toBe('kubernetes.io');
    expect(reservedDomainOf('notkubernetes.io/x')).toBeUndefined();
    expect(isKubernetesNodeTaint('node.kubernetes.io/not-ready')).toBe(true);
    expect(isKubernetesNodeTaint('kubernetes.io/x')).toBe(false);
    expect(isQualifiedKey('example.com/a')).toBe(true);
    expect(isQualifiedKey(`a/${'x'.repeat(64)}`)).toBe(false);
  });
});
