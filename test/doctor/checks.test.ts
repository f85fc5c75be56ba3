/** The cluster-wide checks (src/doctor/checks.ts): version, policies, pull secrets, rollouts, early pulling, the sleeper. */
import { describe, expect, it } from 'vitest';
import { LABEL_POOL } from '../../src/contract/names.js';
import { boundNamespaces, minorOf, STUCK_AFTER_SECONDS } from '../../src/doctor/checks.js';
import { poolsOf, pullSecretsOf } from '../../src/doctor/pools.js';
import { parseAllDocuments } from 'yaml';
import { synthYaml } from '../../src/synth/app.js';
import { bundleOf } from '../helpers.js';
import { diagnose } from '../../src/doctor/diagnose.js';
import type { ClusterRead, DoctorDaemonSet, DoctorInput, DoctorNode, EarlyPullBinding, KubeletConfig } from '../../src/doctor/input.js';
import { Check } from '../../src/doctor/report.js';
import type { Pod } from '../../src/contract/pod-status.js';
import { HELPER_CONTAINER, HELPER_VOLUME } from '../../src/contract/names.js';
import { NOW, ok, denied, holder, holderPod, node, earlyBinding, input, find } from './fixtures.js';

describe('cluster checks', () => {
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
        // Two lanes and lane 0, the sidecar's image: three pulls at once before Ready.
        ['gpu', 3, true],
      ]);
    });
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
