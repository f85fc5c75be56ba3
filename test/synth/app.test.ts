import { ApiObject, JsonPatch } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { poolEntryOf } from '../../src/synth/charts.js';
import { parsePoolsFile, renderPoolsFile } from '../../src/contract/pools-file.js';
import { buildBundle } from '../../src/imagecache/bundle.js';
import { formatDiagnostic, type Diagnostic } from '../../src/imagecache/errors.js';
import type { Bundle } from '../../src/imagecache/model.js';
import { parseFiles } from '../../src/imagecache/parse.js';
import { createApp, synthYaml, type SynthOptions } from '../../src/synth/app.js';
import { pullerLanes } from '../../src/synth/lanes.js';
import { PullDaemonSet } from '../../src/synth/pull-daemonset.js';
import { NAMESPACE_POD_SECURITY } from '../../src/synth/security.js';
import { bundleOf } from '../helpers.js';
import { isHolder, poolOf, Role, roleOf } from '../../src/contract/roles.js';

const reconciler = { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } };
const specs = [
  '  cacheSpec:\n  - images: [redis:7, python:3.12]\n    nodeSelector: {pool: gpu}\n  - images: [busybox:1.36]\n',
  '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {pool: gpu}\n  imagePullSecrets: [{name: s}]\n',
];

function docs(yaml: string) {
  return parseAllDocuments(yaml).map((d) => d.toJS());
}

describe('synthYaml', () => {
  it('is byte-identical whatever the order of the specs', () => {
    const forward = synthYaml(bundleOf(...specs), reconciler);
    const backward = synthYaml(bundleOf(...[...specs].reverse()), reconciler);
    expect(backward).toBe(forward);
  });

  it('puts cluster-scoped objects in a chart without a namespace, first', () => {
    const app = createApp(bundleOf(...specs), { ...reconciler, ownedNamespaces: ['ml'] });
    const [cluster, ...rest] = app.charts;
    expect(cluster?.namespace).toBeUndefined();
    const namespace = cluster?.toJson().find((o: { kind: string }) => o.kind === 'Namespace');
    expect(namespace.metadata).not.toHaveProperty('namespace');
    expect(namespace.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(rest.map((c) => c.namespace)).toEqual(['ml']);
  });

  it('never emits ${, timestamps or GitOps tracking labels', () => {
    const yaml = synthYaml(bundleOf(...specs), reconciler);
    expect(yaml).not.toContain('${');
    // The one GitOps key emitted is the prune protection of namespaces prewarm does not own.
    expect(yaml.replace(/^ *(argocd\.argoproj\.io\/sync-options|kustomize\.toolkit\.fluxcd\.io\/prune): .*$/gm, '')).not.toMatch(
      /creationTimestamp|argocd\.argoproj\.io|kustomize\.toolkit\.fluxcd\.io|app\.kubernetes\.io\/instance/,
    );
    expect(yaml).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
  });

  it('emits one holder DaemonSet per pool and only valid names', () => {
    const all = docs(synthYaml(bundleOf(...specs), reconciler));
    const holders = all.filter((d) => d.kind === 'DaemonSet' && isHolder(d.metadata.labels));
    expect(holders).toHaveLength(2);
    for (const o of all) {
      // RBAC names are path segments and may hold a colon; everything else is a DNS name.
      const pattern = o.kind.startsWith('ClusterRole') ? /^[a-z0-9]([-a-z0-9.:]{0,61}[a-z0-9])?$/ : /^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/;
      expect(o.metadata.name).toMatch(pattern);
    }
  });

  it('writes every pool into each namespace pools file, sorted, for the sidecars', () => {
    const bundle = bundleOf(...specs);
    const file = parsePoolsFile(renderPoolsFile(bundle.pools.map(poolEntryOf)));
    expect(file.pools.map((p) => p.id)).toEqual([...file.pools.map((p) => p.id)].sort());
    expect(file.pools.find((p) => p.placement.nodeSelector['pool'] === 'gpu')).toMatchObject({
      namespace: 'ml',
      gateTaintKey: 'prewarm.dev/warming',
    });
  });

  it('emits the sidecar access objects only with the sidecar, cluster-scoped ones without a namespace', () => {
    const all = docs(synthYaml(bundleOf(...specs), reconciler));
    for (const kind of [
      'ClusterRole',
      'ClusterRoleBinding',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
      'Namespace',
    ]) {
      for (const o of all.filter((d) => d.kind === kind)) expect(o.metadata.namespace).toBeUndefined();
    }
    // The sidecars' and the fail-safe's.
    expect(all.filter((d) => d.kind === 'ServiceAccount').map((d) => `${d.metadata.namespace}/${d.metadata.name}`)).toEqual([
      'ml/prewarm-reconciler',
      'ml/prewarm-failsafe',
    ]);
    expect(all.filter((d) => d.kind === 'Deployment').map((d) => `${d.metadata.namespace}/${d.metadata.name}`)).toEqual([
      'ml/prewarm-failsafe',
    ]);
  });

  it('omits the sidecar, its ServiceAccount and ConfigMap when asked', () => {
    const kinds = docs(synthYaml(bundleOf(...specs))).map((d) => d.kind);
    expect(kinds).toEqual(['Namespace', 'DaemonSet', 'DaemonSet']);
  });
});

describe('namespace ownership', () => {
  const spec = (ns: string) =>
    `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ${ns}}\nspec:\n  cacheSpec:\n  - images: [redis:7]\n`;
  const bundle = (...namespaces: string[]) => {
    const parsed = parseFiles(namespaces.map((ns, i) => ({ path: `${i}.yaml`, text: spec(ns) })));
    return buildBundle(parsed.caches).bundle;
  };
  const namespaces = (b: Bundle, options: SynthOptions) =>
    Object.fromEntries(
      docs(synthYaml(b, options))
        .filter((d) => d.kind === 'Namespace')
        .map((d) => [d.metadata.name, { labels: d.metadata.labels ?? {}, annotations: d.metadata.annotations ?? {} }]),
    );
  const RESTRICTED = { 'app.kubernetes.io/managed-by': 'prewarm', 'app.kubernetes.io/part-of': 'prewarm', ...NAMESPACE_POD_SECURITY };
  const SHARED = { 'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false', 'kustomize.toolkit.fluxcd.io/prune': 'disabled' };
  const owned = { labels: RESTRICTED, annotations: {} };
  const shared = { labels: {}, annotations: SHARED };

  it.each([
    {
      case: 'nothing owned by default: every namespace bare and protected from pruning',
      ns: ['kube-fledged', 'ml-serving'],
      own: undefined,
      expected: { 'kube-fledged': shared, 'ml-serving': shared },
    },
    {
      case: 'an owned namespace is restricted; the others stay bare',
      ns: ['kube-fledged', 'ml-serving', 'prewarm'],
      own: ['prewarm'],
      expected: { 'kube-fledged': shared, 'ml-serving': shared, prewarm: owned },
    },
    { case: 'several owned namespaces', ns: ['a', 'b', 'c'], own: ['c', 'a'], expected: { a: owned, b: shared, c: owned } },
    {
      case: "the cluster's own namespaces are never emitted",
      ns: ['default', 'kube-system', 'kube-public', 'kube-node-lease', 'x'],
      own: ['x'],
      expected: { x: owned },
    },
    {
      case: 'with the sidecar too',
      ns: ['kube-fledged', 'prewarm'],
      own: ['prewarm'],
      sidecar: true,
      expected: { 'kube-fledged': shared, prewarm: owned },
    },
  ])('$case', ({ ns, own, sidecar, expected }) => {
    const options: SynthOptions = { ...(own === undefined ? {} : { ownedNamespaces: own }), ...(sidecar === true ? reconciler : {}) };
    expect(namespaces(bundle(...ns), options)).toEqual(expected);
  });

  it('keeps emitting a namespace when its ownership is given up, so no prune deletes it', () => {
    const b = bundle('kube-fledged', 'prewarm');
    const before = Object.keys(namespaces(b, { ownedNamespaces: ['kube-fledged', 'prewarm'] }));
    expect(Object.keys(namespaces(b, { ownedNamespaces: ['prewarm'] }))).toEqual(before);
    expect(Object.keys(namespaces(b, {}))).toEqual(before);
  });

  it.each([
    ['kube-system', 'ClusterChart: namespace "kube-system" exists in every cluster; prewarm never owns it'],
    ['default', 'ClusterChart: namespace "default" exists in every cluster; prewarm never owns it'],
    ['Bad NS', 'ClusterChart: namespace "Bad NS" is not a valid namespace name: must be a lowercase RFC 1123 label'],
  ])('refuses to own %j', (name, message) => {
    expect(() => synthYaml(bundle('x'), { ownedNamespaces: [name] })).toThrow(message);
  });

  it('warns about an owned namespace that no ImageCache is in', () => {
    const warnings: Diagnostic[] = [];
    synthYaml(bundle('x'), { ownedNamespaces: ['x', 'prewarn'], onWarning: (w) => warnings.push(w) });
    expect(warnings.map(formatDiagnostic)).toEqual([
      'Namespace prewarn: warning: namespace "prewarn" is owned, but no ImageCache is in it, so it is not emitted (a prune deletes it if it was emitted before)',
    ]);
  });
});

describe('lanes', () => {
  const images = '[redis:7, python:3.12, busybox:1.36, nginx:1.27, alpine:3.20]';
  const laned = [
    `  cacheSpec:\n  - images: ${images}\n    nodeSelector: {pool: gpu}\n  lanes: 3\n`,
    `  cacheSpec:\n  - pool: cpu\n    images: ${images}\n  lanes: 16\n`,
    `  cacheSpec:\n  - pool: one\n    images: ${images}\n    nodeSelector: {pool: one}\n  lanes: 1\n`,
    `  cacheSpec:\n  - pool: default\n    images: ${images}\n    nodeSelector: {pool: default}\n`,
  ];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const daemonSets = (options: SynthOptions): any[] => docs(synthYaml(bundleOf(...laned), options)).filter((d) => d.kind === 'DaemonSet');

  it('adds the pullers lanes asks for (none for one lane, up to 3 by default)', () => {
    const byComponent = (ds: { spec: { template: { metadata: { labels: Record<string, string> } } } }) =>
      roleOf(ds.spec.template.metadata.labels);
    const all = daemonSets(reconciler);
    const members = (pool: string | undefined) => all.filter((d) => poolOf(d.spec.template.metadata.labels) === pool);
    const gpu = members(poolOf(all.find((d) => d.metadata.name.startsWith('prewarm-gpu-'))?.metadata.labels));
    const nonEmptyPullerLanes = (lanes: number) => pullerLanes(bundleOf(laned[0] ?? '').pools[0]?.images ?? [], lanes).length;
    expect(nonEmptyPullerLanes(3)).toBeGreaterThan(0);
    expect(gpu.filter((d) => byComponent(d) === Role.Puller)).toHaveLength(nonEmptyPullerLanes(3));
    // 16 lanes over 5 images: one puller per image.
    const cpu = members('cpu').filter((d) => byComponent(d) === Role.Puller);
    expect(cpu).toHaveLength(nonEmptyPullerLanes(16));
    expect(cpu.length).toBeLessThanOrEqual(5);
    expect(members('one').map(byComponent)).toEqual([Role.Holder]);
    // The default is 4 lanes: up to 3 pullers.
    const byDefault = members('default').filter((d) => byComponent(d) === Role.Puller);
    expect(byDefault.length).toBe(pullerLanes(bundleOf(laned[3] ?? '').pools[0]?.images ?? [], 4).length);
    expect(byDefault.length).toBeGreaterThan(0);
    // Every image is held by the holder, and pulled by exactly one puller.
    for (const pool of [gpu, cpu.concat(members('cpu').filter((d) => byComponent(d) === Role.Holder))]) {
      const holder = pool.find((d) => byComponent(d) === Role.Holder);
      const holderImages = holder.spec.template.spec.containers
        .map((c: { image: string }) => c.image)
        .filter((i: string) => !i.includes('reconciler'));
      expect([...holderImages].sort()).toHaveLength(5);
      const pulled = pool
        .filter((d) => byComponent(d) === Role.Puller)
        .flatMap((d) => d.spec.template.spec.containers.map((c: { image: string }) => c.image));
      // Every image is pulled by exactly one puller: the holder has no share of its own.
      expect([...pulled].sort()).toEqual([...holderImages].sort());
    }
  });

  it('emits no pullers without the sidecar, which alone would ever mark a node warm', () => {
    const all = daemonSets({});
    expect(all).toHaveLength(laned.length);
    for (const ds of all) expect(roleOf(ds.spec.template.metadata.labels)).toBe(Role.Holder);
  });

  it('keeps the one-lane output as it was apart from the member label', () => {
    const one = bundleOf(laned[2] ?? '');
    const holder = docs(synthYaml(one, reconciler)).filter((d) => d.kind === 'DaemonSet');
    expect(holder).toHaveLength(1);
    expect(holder[0].spec.template.spec.containers.map((c: { image: string }) => c.image)).toEqual(
      one.pools[0]?.images.map((i) => i.canonical),
    );
  });

  it("never lets a DaemonSet select another one's pods, holders and pullers included", () => {
    const all = daemonSets(reconciler);
    expect(all.length).toBeGreaterThan(4);
    for (const a of all) {
      const selector: Record<string, string> = a.spec.selector.matchLabels;
      expect(a.spec.selector.matchExpressions).toBeUndefined();
      for (const b of all) {
        const labels: Record<string, string> = b.spec.template.metadata.labels;
        const selects = Object.entries(selector).every(([k, v]) => labels[k] === v);
        expect(selects, `${a.metadata.name} selects the pods of ${b.metadata.name}`).toBe(a === b);
      }
    }
  });
});

describe('checks registered with node.addValidation', () => {
  it("run again at cdk8s's own synth: a container added after the charts were checked is refused there, at its pool's entry", () => {
    const app = createApp(bundleOf(...specs), reconciler);
    const holder = app.node.findAll().find((c) => c instanceof PullDaemonSet);
    if (!(holder instanceof PullDaemonSet)) throw new Error('no pull DaemonSet');
    const [first] = ApiObject.of(holder.workload).toJson().spec.template.spec.containers;
    ApiObject.of(holder.workload).addJsonPatch(JsonPatch.add('/spec/template/spec/containers/-', first));
    expect(() => app.synthYaml()).toThrow(
      new RegExp(
        `Validation failed with the following errors:\\n.*: error: .*DaemonSet ml/prewarm-${holder.poolId} has two containers named "${first.name}"`,
      ),
    );
  });
});

describe('the sleeper', () => {
  const images = '[redis:7, python:3.12, busybox:1.36, nginx:1.27, alpine:3.20]';
  const pinned = `  cacheSpec:\n  - pool: arm\n    images: ${images}\n    nodeSelector: {karpenter.sh/nodepool: gpu, kubernetes.io/arch: arm64}\n  lanes: 3\n`;
  const unpinned = `  cacheSpec:\n  - pool: any\n    images: ${images}\n    nodeSelector: {karpenter.sh/nodepool: cpu}\n`;
  const foreign = `  cacheSpec:\n  - pool: z\n    images: [redis:7]\n    nodeSelector: {kubernetes.io/arch: s390x}\n`;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const out = (options: SynthOptions, ...s: string[]): any[] => docs(synthYaml(bundleOf(...s), { ...reconciler, ...options }));
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const podOf = (ds: any) => ds.spec.template.spec;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const byPool = (all: any[], pool: string) =>
    all.filter((d) => d.kind === 'DaemonSet' && poolOf(d.spec.template.metadata.labels) === pool);

  it('runs in every pod of a pool pinned to its architecture, holder and pullers, with no helper init container', () => {
    const all = out({}, pinned, unpinned);
    const maps = all.filter((d) => d.kind === 'ConfigMap' && d.metadata.name.startsWith('prewarm-sleeper-'));
    expect(maps).toHaveLength(1);
    const [map] = maps;
    expect(map.immutable).toBe(true);
    expect(Object.keys(map.binaryData)).toEqual(['amd64', 'arm64']);
    expect(map.data).toBeUndefined();
    const arm = byPool(all, 'arm');
    expect(arm.length).toBe(4); // the holder and 3 pullers
    for (const ds of arm) {
      const pod = podOf(ds);
      expect((pod.initContainers ?? []).map((c: { name: string }) => c.name)).not.toContain('prewarm-helper');
      expect(pod.volumes.find((v: { name: string }) => v.name === 'prewarm-bin')).toEqual({
        name: 'prewarm-bin',
        configMap: { name: map.metadata.name, defaultMode: 0o555, items: [{ key: 'arm64', path: 'sleep', mode: 0o555 }] },
      });
      for (const c of pod.containers) {
        expect(c.command).toEqual(['/prewarm/sleep']);
        expect(c.volumeMounts).toContainEqual({ name: 'prewarm-bin', mountPath: '/prewarm', readOnly: true });
      }
    }
    // The pool that does not name its architecture keeps the helper.
    for (const ds of byPool(all, 'any')) {
      expect(podOf(ds).initContainers.map((c: { name: string }) => c.name)).toContain('prewarm-helper');
      expect(podOf(ds).volumes.find((v: { name: string }) => v.name === 'prewarm-bin').emptyDir).toBeDefined();
    }
  });

  it("runs in every pool once the invocation states the cluster's architecture, except where a pool names another", () => {
    const all = out({ nodeArch: 'amd64' }, pinned, unpinned, foreign);
    const key = (ds: unknown) => podOf(ds).volumes.find((v: { name: string }) => v.name === 'prewarm-bin').configMap?.items[0].key;
    expect(byPool(all, 'any').map(key)).toEqual(Array(byPool(all, 'any').length).fill('amd64'));
    expect(byPool(all, 'arm').map(key)).toEqual(Array(4).fill('arm64'));
    // s390x has no sleeper: the helper, whatever the cluster is said to be.
    expect(byPool(all, 'z').map(key)).toEqual([undefined, undefined]);
    for (const ds of byPool(all, 'z')) expect(podOf(ds).initContainers.map((c: { name: string }) => c.name)).toContain('prewarm-helper');
  });

  it('emits no sleeper ConfigMap where no pool runs it, and one per namespace that has one', () => {
    expect(out({}, unpinned, foreign).filter((d) => d.kind === 'ConfigMap' && d.metadata.name.startsWith('prewarm-sleeper-'))).toEqual([]);
    // Two pools of one namespace, of two architectures: one ConfigMap holds both.
    const two = docs(
      synthYaml(
        bundleOf(pinned, `  cacheSpec:\n  - pool: b\n    images: [redis:7]\n    nodeSelector: {kubernetes.io/arch: amd64}\n`),
        reconciler,
      ),
    ).filter((d) => d.kind === 'ConfigMap' && d.metadata.name.startsWith('prewarm-sleeper-'));
    expect(two).toHaveLength(1);
  });

  it('starts one container fewer in every pod than the helper did', () => {
    const started = (ds: unknown) => {
      const pod = podOf(ds);
      return [...(pod.initContainers ?? []), ...pod.containers].filter((c: { restartPolicy?: string }) => c.restartPolicy !== 'Always')
        .length;
    };
    const withHelper = byPool(out({}, unpinned), 'any');
    const withSleeper = byPool(out({ nodeArch: 'amd64' }, unpinned), 'any');
    expect(withSleeper.map(started)).toEqual(withHelper.map((d) => started(d) - 1));
  });
});
