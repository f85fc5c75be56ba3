import { describe, expect, it } from 'vitest';
import {
  DEFAULTS,
  ENV,
  LABEL_MANAGED_BY,
  LABEL_POOL,
  LABEL_POOL_MEMBER,
  LABEL_PULLER,
  SIDECAR_CONTAINER,
} from '../../src/contract/names.js';
import { boundNamespaces, minorOf, STUCK_AFTER_SECONDS } from '../../src/doctor/checks.js';
import { poolsOf, pullSecretsOf } from '../../src/doctor/pools.js';
import { parseAllDocuments } from 'yaml';
import { synthYaml } from '../../src/synth/app.js';
import { bundleOf } from '../helpers.js';
import { diagnose } from '../../src/doctor/diagnose.js';
import type { ClusterRead, DoctorDaemonSet, DoctorInput, DoctorNode, EarlyPullBinding, KubeletConfig } from '../../src/doctor/input.js';
import { Check, renderDoctorTable, summary, type Finding } from '../../src/doctor/report.js';
import type { Pod } from '../../src/contract/pod-status.js';
import { ABSOLUTE_GRACE_SECONDS } from '../../src/contract/gate-key.js';
import { HELPER_CONTAINER, HELPER_VOLUME } from '../../src/synth/naming.js';

const NOW = Date.parse('2026-12-03T12:00:00Z');
const GATE = 'prewarm.dev/warming';
const ok = <T>(value: T): ClusterRead<T> => ({ kind: 'ok', value });
const denied: ClusterRead<never> = { kind: 'denied', message: '403: forbidden' };

function holder(
  id: string,
  opts: { lanes?: number; pullers?: number; gate?: string; deadline?: number; secrets?: string[]; sidecar?: boolean; early?: boolean } = {},
): DoctorDaemonSet[] {
  const labels = { [LABEL_MANAGED_BY]: 'prewarm', [LABEL_POOL]: id, [LABEL_POOL_MEMBER]: id };
  const env = [
    { name: ENV.gateTaintKey, value: opts.gate ?? GATE },
    { name: ENV.deadlineSeconds, value: String(opts.deadline ?? DEFAULTS.deadlineSeconds) },
  ];
  const rolledOut = { desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, observedGeneration: 1 };
  const ds: DoctorDaemonSet = {
    metadata: { name: `prewarm-${id}`, namespace: 'prewarm', labels, generation: 1 },
    spec: {
      selector: { matchLabels: { [LABEL_POOL]: id } },
      template: {
        spec: {
          // As synth renders it: the sidecar is a native sidecar (an init container, restartPolicy
          // Always) ahead of the helper.
          ...(opts.sidecar === false
            ? { initContainers: [{ name: HELPER_CONTAINER }] }
            : { initContainers: [{ name: SIDECAR_CONTAINER, env, restartPolicy: 'Always' }, { name: HELPER_CONTAINER }] }),
          containers: [{ name: 'img' }],
          ...(opts.secrets ? { imagePullSecrets: opts.secrets.map((name) => ({ name })) } : {}),
        },
      },
    },
    status: rolledOut,
  };
  // A pool of fewer images than lanes has one puller per image: `pullers` says how many there are.
  const pullers = Array.from({ length: opts.pullers ?? ((opts.lanes ?? 1) > 1 ? (opts.lanes ?? 1) : 0) }, (_, i) => ({
    metadata: {
      name: `prewarm-${id}-puller-${i + 1}`,
      namespace: 'prewarm',
      labels: { [LABEL_MANAGED_BY]: 'prewarm', [LABEL_PULLER]: `${id}-${i + 1}`, [LABEL_POOL_MEMBER]: id },
      generation: 1,
    },
    spec: {
      selector: { matchLabels: { [LABEL_PULLER]: `${id}-${i + 1}` } },
      // As synth renders the pullers of a pool with spec.earlyPull.
      ...(opts.early === true ? { template: { spec: { hostNetwork: true, containers: [{ name: 'img' }] } } } : {}),
    },
    status: rolledOut,
  }));
  return [ds, ...pullers];
}

function holderPod(id: string, node: string, sidecar: 'running' | 'held' | 'ErrImagePull' = 'running'): Pod {
  return {
    metadata: {
      name: `prewarm-${id}-${node}`,
      namespace: 'prewarm',
      labels: { [LABEL_MANAGED_BY]: 'prewarm', [LABEL_POOL]: id },
      creationTimestamp: new Date(NOW - 60_000),
    },
    spec: { nodeName: node },
    status: {
      phase: sidecar === 'running' ? 'Running' : 'Pending',
      conditions: [{ type: 'Ready', status: sidecar === 'running' ? 'True' : 'False' }],
      initContainerStatuses: [
        {
          name: SIDECAR_CONTAINER,
          image: 'ghcr.io/prewarm-dev/reconciler:0.1.0',
          ready: sidecar === 'running',
          state:
            sidecar === 'ErrImagePull'
              ? { waiting: { reason: 'ErrImagePull', message: 'not found' } }
              : { running: { startedAt: new Date(NOW - 30_000) } },
        },
      ],
    },
  };
}

function node(name: string, opts: { taints?: string[]; createdAgoS?: number; disk?: string; imageBytes?: number } = {}): DoctorNode {
  return {
    metadata: { name, creationTimestamp: new Date(NOW - (opts.createdAgoS ?? 3600) * 1000) },
    spec: { taints: (opts.taints ?? []).map((key) => ({ key, effect: 'NoSchedule' })) },
    status: {
      capacity: { 'ephemeral-storage': opts.disk ?? '100Gi' },
      allocatable: { pods: '110' },
      images: [{ sizeBytes: opts.imageBytes ?? 2 ** 30 }],
    },
  };
}

/** The early pullers' policy binding as synth writes it, covering `namespaces`. */
function earlyBinding(namespaces: string[]): ClusterRead<EarlyPullBinding> {
  return ok({
    spec: {
      matchResources: {
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] },
      },
    },
  });
}

function input(over: Partial<DoctorInput> = {}): DoctorInput {
  return {
    now: NOW,
    version: ok({ major: '1', minor: '36', gitVersion: 'v1.36.5' }),
    policy: ok(true),
    policyBinding: ok(true),
    earlyPullPolicy: ok(true),
    earlyPullPolicyBinding: earlyBinding(['prewarm']),
    daemonSets: ok(holder('gpu')),
    pods: ok([holderPod('gpu', 'n1')]),
    nodes: ok([node('n1')]),
    secrets: new Map(),
    kubeletConfigs: new Map([
      ['n1', ok<KubeletConfig>({ serializeImagePulls: false, registerWithTaints: [{ key: GATE, effect: 'NoSchedule' }] })],
    ]),
    imageFs: new Map([['n1', ok({ capacityBytes: 100 * 2 ** 30, usedBytes: 10 * 2 ** 30, availableBytes: 90 * 2 ** 30 })]]),
    imageSizes: new Map(),
    ...over,
  };
}

const find = (fs: readonly Finding[], check: string, scope?: string): Finding[] =>
  fs.filter((f) => f.check === check && (scope === undefined || f.scope === scope));

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

  it('reads 30+ as 30 and refuses a major other than 1', () => {
    expect(minorOf({ major: '1', minor: '30+', gitVersion: '' })).toBe(30);
    expect(minorOf({ major: '2', minor: '0', gitVersion: '' })).toBeUndefined();
  });

  it('a missing policy or binding is an error with a fix; a refused read is unknown, not an error', () => {
    const missing = diagnose(input({ policyBinding: { kind: 'missing' } }));
    const f = find(missing.findings, Check.admissionPolicy).find((x) => x.level === 'error');
    expect(f?.message).toBe(
      'ValidatingAdmissionPolicyBinding reconciler.prewarm.dev is not installed: the sidecars may change any label or taint of any node',
    );
    expect(f?.fix).toContain('prewarm-cluster.k8s.yaml');
    expect(missing.errors).toBe(1);
    const refused = diagnose(input({ policy: denied, policyBinding: denied }));
    expect(refused.errors).toBe(0);
    expect(find(refused.findings, Check.admissionPolicy).map((x) => x.level)).toEqual(['unknown', 'unknown']);
    expect(find(refused.findings, Check.admissionPolicy)[0]?.message).toBe(
      'not allowed to read ValidatingAdmissionPolicy reconciler.prewarm.dev (403: forbidden); skipped',
    );
  });

  it('no policy check for --no-reconciler output (no sidecar writes nodes)', () => {
    const r = diagnose(
      input({ daemonSets: ok(holder('gpu', { sidecar: false })), policy: { kind: 'missing' }, policyBinding: { kind: 'missing' } }),
    );
    expect(find(r.findings, Check.admissionPolicy)).toEqual([]);
  });

  it('pull secrets named by pools: read for exactly those, missing is an error, refused is unknown', () => {
    const ds = holder('gpu', { secrets: ['ngc', 'quay'] });
    expect(pullSecretsOf(ds)).toEqual(['prewarm/ngc', 'prewarm/quay']);
    const r = diagnose(
      input({
        daemonSets: ok(ds),
        secrets: new Map<string, ClusterRead<unknown>>([
          ['prewarm/ngc', { kind: 'missing' }],
          ['prewarm/quay', denied],
        ]),
      }),
    );
    const fs = find(r.findings, Check.pullSecret, 'pool prewarm/gpu');
    expect(fs.map((f) => f.level)).toEqual(['error', 'unknown']);
    expect(fs[0]?.message).toContain('pull secret ngc does not exist in namespace prewarm');
    expect(fs[0]?.fix).toContain('kubectl -n prewarm create secret docker-registry ngc');
  });

  it('a rollout is stuck when a pod cannot start or has been unready past the threshold; young unready pods are only rolling out', () => {
    const [ds] = holder('gpu');
    const rolling: DoctorDaemonSet = {
      ...ds,
      status: { desiredNumberScheduled: 2, updatedNumberScheduled: 1, numberAvailable: 1, observedGeneration: 1 },
    };
    const pod = (ageS: number, reason?: string): Pod => ({
      metadata: { name: `p${ageS}`, namespace: 'prewarm', labels: { [LABEL_POOL]: 'gpu' }, creationTimestamp: new Date(NOW - ageS * 1000) },
      spec: { nodeName: 'n2' },
      status: { phase: 'Pending', containerStatuses: reason ? [{ name: 'img', state: { waiting: { reason } } }] : [] },
    });
    const young = diagnose(input({ daemonSets: ok([rolling]), pods: ok([pod(30)]) }));
    expect(find(young.findings, Check.rollout)[0]).toMatchObject({ level: 'info', message: 'rolling out: 1/2 updated, 1/2 available' });
    const old = diagnose(input({ daemonSets: ok([rolling]), pods: ok([pod(STUCK_AFTER_SECONDS + 1)]) }));
    expect(find(old.findings, Check.rollout)[0]?.level).toBe('error');
    expect(find(old.findings, Check.rollout)[0]?.message).toContain(`p${STUCK_AFTER_SECONDS + 1} on n2 (Pending)`);
    const backoff = diagnose(input({ daemonSets: ok([rolling]), pods: ok([pod(30, 'ImagePullBackOff')]) }));
    expect(find(backoff.findings, Check.rollout)[0]?.message).toContain('p30 on n2 (img: ImagePullBackOff)');
    // A generation the controller has not observed yet is not rolled out either.
    const unobserved = diagnose(input({ daemonSets: ok([{ ...ds, metadata: { ...ds?.metadata, generation: 2 } }]), pods: ok([]) }));
    expect(find(unobserved.findings, Check.rollout)[0]?.level).toBe('info');
  });

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

  describe('early pulling', () => {
    const earlyFindings = (kc: KubeletConfig, daemonSets = holder('gpu', { lanes: 3, early: true })) =>
      find(
        diagnose(input({ daemonSets: ok(daemonSets), kubeletConfigs: new Map([['n1', ok(kc)]]) })).findings,
        Check.imagePulls,
        'node n1',
      ).filter((f) => f.message.includes('spec.earlyPull'));

    it.each([
      ['serializeImagePulls: true', { serializeImagePulls: true }],
      ['serializeImagePulls unset (the upstream default)', {}],
    ])('on a kubelet with %s is an error that names the setting and why', (_, kc: KubeletConfig) => {
      const r = diagnose(input({ daemonSets: ok(holder('gpu', { lanes: 3, early: true })), kubeletConfigs: new Map([['n1', ok(kc)]]) }));
      expect(earlyFindings(kc)).toEqual([
        {
          scope: 'node n1',
          check: Check.imagePulls,
          level: 'error',
          message:
            "serializeImagePulls: true (one pull at a time): pool gpu pulls early (spec.earlyPull: true), so its pulls run before the node is Ready, one at a time with everything else: the CNI's own image can queue behind an early multi-gigabyte pull (unless the machine image already holds it), and Ready comes only after it",
          fix: 'set serializeImagePulls: false in the kubelet configuration (with maxParallelImagePulls above 3, or unset), or remove spec.earlyPull from the ImageCaches of pool gpu',
        },
      ]);
      expect(r.errors).toBe(1);
    });

    it('on a parallel kubelet is ok, and a warning when the pullers can take every pull slot', () => {
      expect(earlyFindings({ serializeImagePulls: false }).map((f) => f.level)).toEqual(['ok']);
      expect(earlyFindings({ serializeImagePulls: false, maxParallelImagePulls: 4 }).map((f) => f.level)).toEqual(['ok']);
      expect(earlyFindings({ serializeImagePulls: false, maxParallelImagePulls: 3 })).toMatchObject([
        { level: 'warning', message: expect.stringContaining('with 3 pullers, which can take every pull slot') as string },
      ]);
    });

    it('says nothing of pools that do not pull early', () => {
      expect(earlyFindings({ serializeImagePulls: true }, holder('gpu', { lanes: 3 }))).toEqual([]);
    });

    describe("the early pullers' admission policy", () => {
      const policyFindings = (over: Partial<DoctorInput>, daemonSets = holder('gpu', { lanes: 3, early: true })) =>
        find(diagnose(input({ daemonSets: ok(daemonSets), ...over })).findings, Check.admissionPolicy).filter((f) =>
          f.message.includes('early-pullers.prewarm.dev'),
        );

      it("installed and covering the pool's namespace: ok", () => {
        const fs = policyFindings({ earlyPullPolicy: ok(true), earlyPullPolicyBinding: earlyBinding(['ml', 'prewarm']) });
        expect(fs.map((f) => [f.level, f.message])).toEqual([
          ['ok', 'ValidatingAdmissionPolicy early-pullers.prewarm.dev is installed'],
          ['ok', 'ValidatingAdmissionPolicyBinding early-pullers.prewarm.dev covers prewarm'],
        ]);
      });

      it('missing: an error that says what Pod Security privileged then allows, with the fix', () => {
        const fs = policyFindings({ earlyPullPolicy: { kind: 'missing' }, earlyPullPolicyBinding: { kind: 'missing' } });
        expect(fs.map((f) => f.level)).toEqual(['error', 'error']);
        expect(fs[0]?.message).toBe(
          'ValidatingAdmissionPolicy early-pullers.prewarm.dev is not installed: namespace prewarm enforces Pod Security privileged for early pullers, so without it any pod there may run privileged, with host paths, ports or namespaces',
        );
        expect(fs[1]?.fix).toContain('prewarm-cluster.k8s.yaml');
      });

      it("a binding that leaves out the pool's namespace is an error naming it", () => {
        const fs = policyFindings({ earlyPullPolicy: ok(true), earlyPullPolicyBinding: earlyBinding(['ml']) });
        expect(fs.map((f) => [f.level, f.message])).toEqual([
          ['ok', 'ValidatingAdmissionPolicy early-pullers.prewarm.dev is installed'],
          [
            'error',
            'ValidatingAdmissionPolicyBinding early-pullers.prewarm.dev does not cover namespace prewarm, where early pullers run: Pod Security there is privileged and nothing else checks the pods',
          ],
        ]);
      });

      it('a selector of another shape is a warning, a refused read unknown; neither is an error', () => {
        const other = policyFindings({
          earlyPullPolicy: ok(true),
          earlyPullPolicyBinding: ok({ spec: { matchResources: { namespaceSelector: { matchLabels: { team: 'ml' } } } } }),
        });
        expect(other.map((f) => f.level)).toEqual(['ok', 'warning']);
        const refused = diagnose(
          input({ daemonSets: ok(holder('gpu', { lanes: 3, early: true })), earlyPullPolicy: denied, earlyPullPolicyBinding: denied }),
        );
        expect(
          find(refused.findings, Check.admissionPolicy)
            .filter((f) => f.message.includes('early-pullers'))
            .map((f) => f.level),
        ).toEqual(['unknown', 'unknown']);
        expect(refused.errors).toBe(0);
      });

      it('not checked where no pool pulls early', () => {
        expect(policyFindings({}, holder('gpu', { lanes: 3 }))).toEqual([]);
      });

      it('the binding synth renders covers the namespaces of its early-pull pools', () => {
        const bundle = bundleOf('  cacheSpec:\n  - pool: gpu\n    images: [redis:7, python:3.12]\n  lanes: 2\n  earlyPull: true\n');
        const docs = parseAllDocuments(synthYaml(bundle, { reconciler: { image: 'r:1' }, ownedNamespaces: ['ml'] })).map(
          (d) => d.toJS() as { kind: string; metadata: { name: string } } & EarlyPullBinding,
        );
        const rendered = docs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding' && d.metadata.name === 'early-pullers.prewarm.dev');
        expect(rendered, 'synth renders the binding').toBeDefined();
        expect([...(boundNamespaces(rendered as EarlyPullBinding) ?? [])]).toEqual(['ml']);
      });
    });

    it('reads the setting from the DaemonSets synth renders', () => {
      const bundle = bundleOf(
        '  cacheSpec:\n  - pool: gpu\n    images: [redis:7, python:3.12]\n  lanes: 2\n  earlyPull: true\n',
        '  cacheSpec:\n  - pool: cpu\n    images: [redis:7, python:3.12]\n    nodeSelector: {tier: cpu}\n  lanes: 2\n',
      );
      const rendered = parseAllDocuments(synthYaml(bundle, { reconciler: { image: 'r:1' }, ownedNamespaces: ['ml'] }))
        .map((d) => d.toJS() as DoctorDaemonSet & { kind: string })
        .filter((d) => d.kind === 'DaemonSet');
      expect(poolsOf(rendered).map((p) => [p.id, p.pullers, p.earlyPull])).toEqual([
        ['cpu', 2, false],
        ['gpu', 2, true],
      ]);
    });
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

describe('the sleeper', () => {
  const withArch = (n: DoctorNode, architecture: string | undefined): DoctorNode => ({
    ...n,
    status: { ...n.status, ...(architecture === undefined ? {} : { nodeInfo: { operatingSystem: 'linux', architecture } }) },
  });
  /** The pool's DaemonSets as synth renders them with the sleeper of `arch`: a ConfigMap volume, no helper. */
  const sleeperPool = (id: string, arch: string): DoctorDaemonSet[] =>
    holder(id).map((ds) =>
      ds.spec?.template?.spec
        ? {
            ...ds,
            spec: {
              ...ds.spec,
              template: {
                spec: {
                  ...ds.spec.template.spec,
                  initContainers: (ds.spec.template.spec.initContainers ?? []).filter((c) => c.name !== HELPER_CONTAINER),
                  volumes: [{ name: HELPER_VOLUME, configMap: { items: [{ key: arch }] } }],
                },
              },
            },
          }
        : ds,
    );
  const nodes = (...arches: (string | undefined)[]) => ok(arches.map((a, i) => withArch(node(`n${i + 1}`), a)));
  const pods = (id: string, ...on: string[]) => ok(on.map((n) => holderPod(id, n)));

  it('a pool that runs the sleeper of its nodes: ok', () => {
    const r = diagnose(
      input({ daemonSets: ok(sleeperPool('gpu', 'arm64')), nodes: nodes('arm64', 'arm64'), pods: pods('gpu', 'n1', 'n2') }),
    );
    expect(find(r.findings, Check.sleeper)).toEqual([
      expect.objectContaining({ scope: 'pool prewarm/gpu', level: 'ok', message: 'its pods run the arm64 sleeper, on arm64 nodes only' }),
    ]);
  });

  it('its pods on a node of another architecture (a wrong --node-arch): an error naming the node and the fix', () => {
    const r = diagnose(
      input({
        daemonSets: ok(sleeperPool('gpu', 'amd64')),
        nodes: nodes('amd64', 'arm64', undefined),
        pods: pods('gpu', 'n1', 'n2', 'n3'),
      }),
    );
    const [f] = find(r.findings, Check.sleeper);
    expect(f).toMatchObject({ level: 'error', scope: 'pool prewarm/gpu' });
    expect(f?.message).toBe(
      'its pods run the amd64 sleeper, but 1 node of another architecture runs them (n2: arm64): their image containers cannot start (exec format error)',
    );
    expect(f?.fix).toContain('without --node-arch when the cluster mixes architectures');
    expect(r.errors).toBeGreaterThan(0);
  });

  it('the helper where every node is of one architecture the sleeper has: information with the flag to pass', () => {
    const r = diagnose(input({ nodes: nodes('arm64', 'arm64') }));
    expect(find(r.findings, Check.sleeper)).toEqual([
      expect.objectContaining({
        level: 'info',
        message: 'its pods copy busybox in with the helper init container, though every node is arm64',
      }),
    ]);
    expect(find(r.findings, Check.sleeper)[0]?.fix).toContain('--node-arch arm64');
  });

  it('the helper in a cluster of several architectures, of one without a sleeper, or with a node of unknown one: nothing to say', () => {
    for (const n of [nodes('amd64', 'arm64'), nodes('s390x'), nodes('amd64', undefined)])
      expect(find(diagnose(input({ nodes: n })).findings, Check.sleeper)).toEqual([]);
  });

  it('reads the sleeper and the helper off the DaemonSets synth renders', () => {
    const spec =
      '  cacheSpec:\n  - pool: a\n    images: [redis:7]\n    nodeSelector: {kubernetes.io/arch: arm64}\n  - pool: b\n    images: [redis:7]\n';
    const daemonSets = parseAllDocuments(synthYaml(bundleOf(spec), { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } }))
      .map((d) => d.toJS() as DoctorDaemonSet & { kind: string })
      .filter((d) => d.kind === 'DaemonSet');
    expect(poolsOf(daemonSets).map((p) => [p.id, p.sleep])).toEqual([
      ['a', { kind: 'sleeper', arch: 'arm64' }],
      ['b', { kind: 'helper' }],
    ]);
  });

  it('quotes what the cluster sent short: a huge architecture from a hostile apiserver', () => {
    const huge = 'x'.repeat(100_000);
    const r = diagnose(input({ daemonSets: ok(sleeperPool('gpu', huge)), nodes: nodes(`y${huge}`), pods: pods('gpu', 'n1') }));
    const [f] = find(r.findings, Check.sleeper);
    expect(f?.level).toBe('error');
    expect(f?.message.length).toBeLessThan(400);
  });

  it('refused nodes: no sleeper findings, and no false error', () => {
    const r = diagnose(input({ daemonSets: ok(sleeperPool('gpu', 'amd64')), nodes: denied }));
    expect(find(r.findings, Check.sleeper)).toEqual([]);
  });
});

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
