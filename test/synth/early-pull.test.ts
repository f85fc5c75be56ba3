import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { ClusterChart } from '../../src/synth/charts.js';
import { parseAllDocuments } from 'yaml';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { ACCESS_NAMES } from '../../src/contract/access-names.js';
import { LABEL_PULLER } from '../../src/contract/names.js';
import { STARTUP_TOLERATIONS } from '../../src/contract/placement.js';
import { isHolder, isPuller } from '../../src/contract/roles.js';
import { synthYaml, type SynthOptions } from '../../src/synth/app.js';
import { SIDECAR_IMAGE_CONTAINER } from '../../src/contract/names.js';
import { EARLY_PULL_NAMESPACE_POD_SECURITY, NAMESPACE_POD_SECURITY } from '../../src/synth/security.js';
import { bundleOfFiles, cache, cli } from '../helpers.js';
import { refusal } from './spec-fixtures.js';

const reconciler = { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' };
const IMAGES = '[redis:7, python:3.12, busybox:1.36, nginx:1.27, alpine:3.20]';

/** A pool of five images with two selector labels and a toleration, in `ns`, with `extra` settings. */
const gpu = (extra: string, pool = 'gpu') =>
  `  cacheSpec:\n  - pool: ${pool}\n    images: ${IMAGES}\n    nodeSelector: {node.kubernetes.io/instance-type: g5.2xlarge, zone: a}\n` +
  `    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n${extra}`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Manifest = any;

function synth(files: ReturnType<typeof cache>[], options: SynthOptions): Manifest[] {
  return parseAllDocuments(synthYaml(bundleOfFiles(files), options)).map((d) => d.toJS());
}

const daemonSets = (out: Manifest[]) => out.filter((d) => d.kind === 'DaemonSet');
const labelsOf = (ds: Manifest): Record<string, string> => ds.spec.template.metadata.labels;

describe('early pullers', () => {
  const owned: SynthOptions = { reconciler, ownedNamespaces: ['prewarm'] };
  const early = synth([cache('a.yaml', 'a', 'prewarm', gpu('  lanes: 3\n  earlyPull: true\n'))], owned);
  const late = synth([cache('a.yaml', 'a', 'prewarm', gpu('  lanes: 3\n'))], owned);

  it('run on the host network with the node resolver, only the pullers', () => {
    const all = daemonSets(early);
    const pullers = all.filter((d) => isPuller(labelsOf(d)));
    // Three lanes and the sidecar image's.
    expect(pullers).toHaveLength(4);
    for (const ds of pullers) {
      expect(ds.spec.template.spec.hostNetwork).toBe(true);
      expect(ds.spec.template.spec.dnsPolicy).toBe('Default');
    }
    const holders = all.filter((d) => isHolder(labelsOf(d)));
    expect(holders).toHaveLength(1);
    expect(holders[0].spec.template.spec.hostNetwork).toBe(false);
    expect(holders[0].spec.template.spec.dnsPolicy).toBe('ClusterFirst');
  });

  it('tolerate the start-up taints, whole, after the pool tolerations and the gate', () => {
    const puller = daemonSets(early).find((d) => isPuller(labelsOf(d)));
    expect(puller.spec.template.spec.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'prewarm.dev/warming', operator: 'Exists' },
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'karpenter.sh/unregistered', operator: 'Exists', effect: 'NoExecute' },
    ]);
    expect(STARTUP_TOLERATIONS).toHaveLength(4);
  });

  it('leave the holder byte for byte as it is without earlyPull', () => {
    const holder = (out: Manifest[]) => daemonSets(out).find((d) => isHolder(labelsOf(d)));
    expect(holder(early)).toEqual(holder(late));
    expect(holder(early)).toBeDefined();
  });

  it("one more puller, lane 0, pulls only the sidecar's image", () => {
    const pullers = daemonSets(early).filter((d) => isPuller(labelsOf(d)));
    const carriers = pullers.filter((d) => d.spec.template.spec.containers.some((c: Manifest) => c.name === SIDECAR_IMAGE_CONTAINER));
    expect(carriers).toHaveLength(1);
    const carrier = carriers[0];
    expect(carrier.metadata.name).toBe('prewarm-gpu-puller-0');
    expect(labelsOf(carrier)[LABEL_PULLER]).toBe('gpu-0');
    expect(carrier.spec.template.spec.containers).toHaveLength(1);
    expect(carrier.spec.template.spec.containers[0]).toMatchObject({
      name: SIDECAR_IMAGE_CONTAINER,
      image: reconciler.image,
      imagePullPolicy: 'IfNotPresent',
      command: ['/prewarm/busybox', 'sleep', expect.any(String)],
    });
    // The pool's own pullers are the ones it has without earlyPull: 5 images over 3 lanes.
    const own = pullers.filter((d) => d !== carrier);
    expect(own.map((d) => d.metadata.name).sort()).toEqual(
      daemonSets(late)
        .filter((d) => isPuller(labelsOf(d)))
        .map((d) => d.metadata.name)
        .sort(),
    );
    // Not without earlyPull, and not without a sidecar (then there are no pullers at all).
    const plain = daemonSets(late).flatMap((d) => d.spec.template.spec.containers as Manifest[]);
    expect(plain.filter((x) => x.name === SIDECAR_IMAGE_CONTAINER)).toEqual([]);
  });

  it("differ from ordinary pullers only in the host network, the resolver and the tolerations, beside the sidecar image's", () => {
    const strip = (ds: Manifest) => {
      const copy = structuredClone(ds);
      delete copy.spec.template.spec.hostNetwork;
      delete copy.spec.template.spec.dnsPolicy;
      delete copy.spec.template.spec.tolerations;
      return copy;
    };
    const pullers = (out: Manifest[]) => daemonSets(out).filter((d) => isPuller(labelsOf(d)));
    const ofPool = (out: Manifest[]) =>
      pullers(out).filter((d) => !d.spec.template.spec.containers.some((c: Manifest) => c.name === SIDECAR_IMAGE_CONTAINER));
    expect(ofPool(early).map(strip)).toEqual(pullers(late).map(strip));
    // What stays: no token, no ports, uid 65532, nothing added, a read-only root, the helper's sleep.
    for (const ds of pullers(early)) {
      const spec = ds.spec.template.spec;
      expect(spec.automountServiceAccountToken).toBe(false);
      expect(spec.serviceAccountName).toBeUndefined();
      for (const c of [...spec.containers, ...spec.initContainers]) {
        expect(c.ports).toBeUndefined();
        expect(c.securityContext).toMatchObject({ runAsUser: 65532, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
        expect(c.securityContext.capabilities.add).toBeUndefined();
      }
      for (const c of spec.containers) expect(c.command.slice(0, 2)).toEqual(['/prewarm/busybox', 'sleep']);
    }
  });

  it('keep a selector of several labels in one term, ANDed with the warm-up requirement', () => {
    const puller = daemonSets(early).find((d) => isPuller(labelsOf(d)));
    expect(puller.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).toEqual([
      {
        matchExpressions: [
          { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['g5.2xlarge'] },
          { key: 'zone', operator: 'In', values: ['a'] },
          { key: 'prewarm.dev/gpu', operator: 'NotIn', values: ['warm', 'partial'] },
        ],
      },
    ]);
  });

  it('grow no RBAC: the sidecar already lists and watches pods in the pool namespace', () => {
    const access = (out: Manifest[]) =>
      out.filter((d) => ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ServiceAccount'].includes(d.kind));
    expect(access(early)).toEqual(access(late));
    const pods = early.find((d) => d.kind === 'ClusterRole' && d.metadata.name === ACCESS_NAMES.podsRole);
    expect(pods.rules).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }]);
    const binding = early.find((d) => d.kind === 'RoleBinding' && d.metadata.name === ACCESS_NAMES.roleBinding);
    expect(binding.metadata.namespace).toBe('prewarm');
    expect(binding.roleRef.name).toBe(ACCESS_NAMES.podsRole);
  });

  it('leave pools.json, the sidecars view, as it is without earlyPull', () => {
    const pools = (out: Manifest[]) => out.find((d) => d.kind === 'ConfigMap').data;
    expect(pools(early)).toEqual(pools(late));
  });

  it('are not emitted without the sidecar, and the namespace then stays restricted', () => {
    const out = synth([cache('a.yaml', 'a', 'prewarm', gpu('  earlyPull: true\n'))], { ownedNamespaces: ['prewarm'] });
    expect(daemonSets(out).map((d) => isHolder(labelsOf(d)))).toEqual([true]);
    expect(out.find((d) => d.kind === 'Namespace').metadata.labels).toMatchObject(NAMESPACE_POD_SECURITY);
    expect(out.filter((d) => d.kind === 'ValidatingAdmissionPolicy')).toEqual([]);
  });
});

describe('Pod Security of namespaces with early pullers', () => {
  const files = [
    cache('a.yaml', 'a', 'early', gpu('  earlyPull: true\n')),
    cache('b.yaml', 'b', 'plain', gpu('', 'b')),
    cache('c.yaml', 'c', 'shared', gpu('', 'c')),
    cache('d.yaml', 'd', 'early2', gpu('  earlyPull: true\n', 'd')),
  ];
  const out = synth(files, { reconciler, ownedNamespaces: ['early', 'plain', 'early2'] });
  const labels = (ns: string) => out.find((d) => d.kind === 'Namespace' && d.metadata.name === ns).metadata.labels ?? {};

  it('enforces privileged only where an early-pull pool is; warn and audit stay restricted', () => {
    for (const ns of ['early', 'early2']) {
      expect(labels(ns)).toMatchObject(EARLY_PULL_NAMESPACE_POD_SECURITY);
      expect(labels(ns)).toMatchObject({
        'pod-security.kubernetes.io/enforce': 'privileged',
        'pod-security.kubernetes.io/warn': 'restricted',
        'pod-security.kubernetes.io/audit': 'restricted',
      });
    }
    expect(labels('plain')).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted' });
    expect(labels('shared')).toEqual({});
  });

  it('emits one admission policy, bound to exactly those namespaces by name', () => {
    const policies = out.filter((d) => d.kind === 'ValidatingAdmissionPolicy' && d.metadata.name === ACCESS_NAMES.earlyPullPolicy);
    expect(policies).toHaveLength(1);
    const [binding] = out.filter((d) => d.kind === 'ValidatingAdmissionPolicyBinding' && d.metadata.name === ACCESS_NAMES.earlyPullPolicy);
    expect(binding.metadata.namespace).toBeUndefined();
    expect(binding.spec).toEqual({
      policyName: ACCESS_NAMES.earlyPullPolicy,
      validationActions: ['Deny'],
      matchResources: {
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['early', 'early2'] }] },
      },
    });
    const spec = policies[0].spec;
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConstraints.resourceRules.map((r: { resources: string[] }) => r.resources)).toEqual([
      ['pods'],
      ['pods/ephemeralcontainers'],
    ]);
    expect(spec.validations[0].expression).toContain(`'${LABEL_PULLER}' in object.metadata.labels`);
  });

  it('emits no such policy when no pool pulls early', () => {
    const plain = synth([cache('b.yaml', 'b', 'plain', gpu(''))], { reconciler, ownedNamespaces: ['plain'] });
    expect(plain.filter((d) => d.metadata.name === ACCESS_NAMES.earlyPullPolicy)).toEqual([]);
  });
});

describe('early pulling is refused', () => {
  const owned: SynthOptions = { reconciler, ownedNamespaces: ['prewarm'] };

  it('in a namespace that is not owned, at the setting, naming the pool and its entry', () => {
    expect(refusal([cache('specs/a.yaml', 'a', 'ml', gpu('  earlyPull: true\n'))], { reconciler, ownedNamespaces: ['prewarm'] })).toEqual([
      "specs/a.yaml:10:14: error: document 1: spec.earlyPull: pool ml/gpu (specs/a.yaml:6:5 spec.cacheSpec[0]): earlyPull needs a namespace prewarm owns, and ml is not owned: early pullers use the host network, which Pod Security baseline and restricted forbid, and synth relaxes only an owned namespace (--own-namespace ml), under an admission policy that admits the host network only for its pullers; own a namespace that holds only prewarm's pods, move the pool there, or remove earlyPull",
    ]);
  });

  it('with lanes: 1, naming the pool and where lanes is set', () => {
    expect(refusal([cache('a.yaml', 'a', 'prewarm', gpu('  lanes: 1\n  earlyPull: true\n'))], owned)).toEqual([
      "a.yaml:11:14: error: document 1: spec.earlyPull: pool prewarm/gpu (a.yaml:6:5 spec.cacheSpec[0]): earlyPull needs burst pullers, and lanes: 1 (a.yaml:10:10 spec.lanes) has none: the pool's one pod, the holder, stays on the pod network and starts only once the node has one; set lanes to 2 or more, or remove earlyPull",
    ]);
  });

  it('without the sidecar too: what a spec may ask for does not depend on it', () => {
    expect(refusal([cache('a.yaml', 'a', 'ml', gpu('  lanes: 1\n  earlyPull: true\n'))], {})).toHaveLength(2);
  });

  it('by the ClusterChart itself, for a library user who builds the charts without addPrewarmCharts', () => {
    const bundle = bundleOfFiles([cache('a.yaml', 'a', 'ml', gpu('  earlyPull: true\n'))]);
    expect(() => new ClusterChart(Testing.app(), 'cluster', { bundle, reconciler: true })).toThrow(
      'ClusterChart: early-pull pools need a namespace prewarm owns; ml is not owned',
    );
    expect(() => new ClusterChart(Testing.app(), 'cluster', { bundle, reconciler: true, ownedNamespaces: ['ml'] })).not.toThrow();
  });

  it('by the CLI with exit 1 and nothing written, and accepted once the namespace is owned', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-early-'));
    await writeFile(join(dir, 'a.yaml'), cache('a.yaml', 'a', 'ml', gpu('  earlyPull: true\n')).text);
    const refused = await cli('synth', dir, '--stdout');
    expect(refused.code).toBe(ExitCode.InvalidInput);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('spec.earlyPull: pool ml/gpu');
    expect(refused.stderr).toContain('earlyPull needs a namespace prewarm owns, and ml is not owned');
    const accepted = await cli('synth', dir, '--stdout', '--own-namespace', 'ml');
    expect(accepted.code).toBe(ExitCode.Success);
    expect(accepted.stdout).toContain('hostNetwork: true');
  });
});
