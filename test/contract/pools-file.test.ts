import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ENV, POOLS_CONFIGMAP, POOLS_FILE, SIDECAR_CONTAINER } from '../../src/contract/names.js';
import { loadBundle } from '../../src/imagecache/load.js';
import type { Bundle } from '../../src/imagecache/model.js';
import { configFromEnv } from '../../src/contract/sidecar-env.js';
import { synthYaml } from '../../src/synth/app.js';
import { poolEntryOf } from '../../src/synth/charts.js';
import { placementOf } from '../../src/contract/placement.js';
import { parsePoolsFile, renderPoolsFile, type PoolEntry } from '../../src/contract/pools-file.js';
import { isHolder, isPuller, poolOf } from '../../src/contract/roles.js';
import { bundleOfFiles } from '../helpers.js';
/**
 * The synth↔sidecar round trip of pools.json, for every valid spec the repo has: what synthesis
 * writes into each namespace's `prewarm-pools` ConfigMap, the sidecar's parser reads back into
 * exactly the pools synthesis computed, and each sidecar's own environment names the same pool.
 */
describe('what synth writes into prewarm-pools, the sidecar parses into the pools synth computed', () => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  type Manifest = any;

  const byId = (a: PoolEntry, b: PoolEntry): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

  /** Synthesizes `bundle` with the sidecar and checks the contract on the output. */
  function checkRoundTrip(bundle: Bundle): void {
    const manifests: Manifest[] = parseAllDocuments(
      synthYaml(bundle, { reconciler: { image: 'registry.example/prewarm-reconciler:1' }, allowedGateKeys: ['example.com/'] }),
    ).map((d) => d.toJS());
    const want = bundle.pools.map(poolEntryOf).sort(byId);
    expect(want.length).toBeGreaterThan(0);

    // One ConfigMap per namespace, each listing every pool of the bundle: a sidecar must see the
    // pools of other namespaces that gate its node too.
    const maps = manifests.filter((m) => m.kind === 'ConfigMap' && m.metadata.name === POOLS_CONFIGMAP);
    expect(maps.map((m) => m.metadata.namespace).sort()).toEqual([...bundle.namespaces].sort());
    for (const m of maps) expect(parsePoolsFile(m.data[POOLS_FILE] as string).pools).toStrictEqual(want);

    // Each pool's sidecar is configured, by its environment, as the pool pools.json describes.
    const all = manifests.filter((m) => m.kind === 'DaemonSet');
    const daemonSets = all.filter((m) => isHolder(m.metadata.labels));
    expect(daemonSets).toHaveLength(want.length);
    // Burst pullers are placed by the same placement as their pool (the default lanes give these
    // specs pullers, so the loop below always has some to check).
    const pullers = all.filter((m) => isPuller(m.metadata.labels));
    expect(pullers.length).toBeGreaterThan(0);
    for (const puller of pullers) {
      const entry = want.find((p) => p.id === poolOf(puller.metadata.labels));
      expect(entry, `puller ${puller.metadata.name} of a pool pools.json lists`).toBeDefined();
      expect(puller.spec.template.spec.tolerations ?? []).toStrictEqual(entry?.placement.tolerations);
    }
    for (const ds of daemonSets) {
      const pod = ds.spec.template.spec;
      const sidecar = [...(pod.initContainers ?? []), ...pod.containers].find((c: Manifest) => c.name === SIDECAR_CONTAINER);
      const env = Object.fromEntries((sidecar.env as Manifest[]).map((e) => [e.name, e.value ?? `from-${e.name}`]));
      const config = configFromEnv(env);
      const entry = want.find((p) => p.id === config.poolId);
      expect(entry, `pools.json has no pool ${config.poolId}`).toBeDefined();
      expect({
        namespace: ds.metadata.namespace,
        nodeLabelKey: config.nodeLabelKey,
        gateTaintKey: config.gateTaintKey,
        deadlineSeconds: config.deadlineSeconds,
        tolerations: pod.tolerations ?? [],
      }).toStrictEqual({
        namespace: entry?.namespace,
        nodeLabelKey: entry?.nodeLabelKey,
        gateTaintKey: entry?.gateTaintKey,
        deadlineSeconds: entry?.deadlineSeconds,
        tolerations: entry?.placement.tolerations,
      });
      expect(env[ENV.pool]).toBe(poolOf(ds.spec.template.metadata.labels));
    }
  }

  it.each(['examples', ...['kube-fledged', 'ml', 'platform'].map((d) => join('examples', d))])('%s', async (dir) => {
    checkRoundTrip((await loadBundle([dir])).bundle);
  });

  it('covers every folder of examples/', async () => {
    const dirs = (await readdir('examples', { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(dirs.sort()).toEqual(['kube-fledged', 'ml', 'platform']);
  });

  const prewarm = (name: string, namespace: string, spec: string): string =>
    `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${spec}`;
  const fledged = (name: string, namespace: string, spec: string): string =>
    `apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${spec}`;

  const cases: [string, Record<string, string>][] = [
    [
      'kube-fledged: no selector, one label, several labels (ANDed); tolerates every taint',
      {
        'kf.yaml': fledged(
          'kf',
          'kube-fledged',
          '  cacheSpec:\n  - images: [nginx:1.25]\n  - images: [redis:7]\n    nodeSelector: {tier: backend}\n  - images: [etcd:3.5]\n    nodeSelector: {tier: backend, topology.kubernetes.io/zone: eu-west-1a}\n',
        ),
      },
    ],
    [
      'prewarm.dev: every toleration shape, a custom gate key (allowed by the invocation) and deadline',
      {
        'gpu.yaml': prewarm(
          'gpu',
          'ml',
          [
            '  cacheSpec:',
            '  - pool: gpu',
            '    nodeSelector: {node.kubernetes.io/instance-type: g5.2xlarge, topology.kubernetes.io/zone: eu-west-1a}',
            '    tolerations:',
            '    - {operator: Exists, effect: NoExecute}',
            '    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}',
            '    - {key: dedicated, operator: Equal, value: ml, effect: NoExecute, tolerationSeconds: 300}',
            '    - {key: spot, operator: Equal, value: "true"}',
            '    images: [pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime]',
            '  gate: {taintKey: example.com/not-ready, deadline: 90s}',
            '',
          ].join('\n'),
        ),
      },
    ],
    [
      'prewarm.dev: a pool that does not gate, and one whose toleration already covers its gate key',
      {
        'a.yaml': prewarm('a', 'apps', '  cacheSpec:\n  - images: [nginx:1.25]\n  gate: {enabled: false}\n'),
        'b.yaml': prewarm(
          'b',
          'apps',
          '  cacheSpec:\n  - images: [redis:7]\n    tolerations: [{key: prewarm.dev/warming, operator: Exists}]\n',
        ),
      },
    ],
    [
      'both dialects in several namespaces: every ConfigMap lists every pool',
      {
        'kf.yaml': fledged('kf', 'kube-fledged', '  cacheSpec:\n  - images: [nginx:1.25]\n    nodeSelector: {tier: web}\n'),
        'ml.yaml': prewarm(
          'ml',
          'ml',
          '  cacheSpec:\n  - images: [python:3.12-slim]\n    nodeSelector: {tier: web}\n  gate: {deadline: 20m}\n',
        ),
        'base.yaml': prewarm('base', 'prewarm', '  cacheSpec:\n  - images: [busybox:1.36]\n    tolerations: [{operator: Exists}]\n'),
      },
    ],
  ];
  it.each(cases)('%s', (_name, files) => {
    checkRoundTrip(bundleOfFiles(Object.entries(files).map(([path, text]) => ({ path, text }))));
  });
});

describe('parsePoolsFile', () => {
  const entry = {
    id: 'gpu',
    namespace: 'ns',
    nodeLabelKey: 'prewarm.dev/gpu',
    nodeSelector: { a: 'b' },
    tolerations: [{ key: 'k', operator: 'Exists' }],
    gateTaintKey: '',
    deadlineSeconds: 30,
  };
  const file = (over: object): string => JSON.stringify({ pools: [{ ...entry, ...over }] });

  it('parses a valid file into the placement synth renders', () => {
    expect(parsePoolsFile(file({})).pools).toEqual([
      {
        id: 'gpu',
        namespace: 'ns',
        nodeLabelKey: 'prewarm.dev/gpu',
        placement: placementOf({ a: 'b' }, [{ key: 'k', operator: 'Exists' }]),
        gateTaintKey: '',
        deadlineSeconds: 30,
      },
    ]);
  });

  it('renders what it parses, byte for byte', () => {
    const text = renderPoolsFile(
      parsePoolsFile(file({ tolerations: [{ operator: 'Exists', effect: 'NoExecute' }], gateTaintKey: 'g/k' })).pools,
    );
    expect(renderPoolsFile(parsePoolsFile(text).pools)).toBe(text);
  });

  it.each([
    ['{', 'pools.json is not valid JSON'],
    ['{}', 'pools.json: "pools" must be an array'],
    [JSON.stringify({ pools: [3] }), 'pools.json: pools[0] must be an object'],
    [file({ id: 1 }), 'pools.json: pools[0].id must be a string'],
    [file({ nodeSelector: { a: 1 } }), 'pools.json: pools[0].nodeSelector must map strings to strings'],
    [file({ nodeSelector: [] }), 'pools.json: pools[0].nodeSelector must map strings to strings'],
    [file({ tolerations: {} }), 'pools.json: pools[0].tolerations must be an array'],
    [file({ deadlineSeconds: 0 }), 'pools.json: pools[0].deadlineSeconds must be a positive integer'],
    [file({ tolerations: [{ key: 3 }] }), 'pools.json: pools[0].tolerations[0].key must be a string'],
    [file({ tolerations: [null] }), 'pools.json: pools[0].tolerations[0]: toleration must be an object'],
    [file({ tolerations: [{ operator: 'Lt' }] }), 'pools.json: pools[0].tolerations[0].operator must be "Exists" or "Equal"'],
    [
      file({ tolerations: [{ operator: 'Exists', effect: 'Never' }] }),
      'pools.json: pools[0].tolerations[0].effect must be one of NoSchedule, PreferNoSchedule, NoExecute',
    ],
    [
      file({ tolerations: [{ operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 1.5 }] }),
      'pools.json: pools[0].tolerations[0].tolerationSeconds must be an integer',
    ],
    // Synthesis never writes a Kubernetes node taint as a gate key; a file that holds one is refused.
    [
      file({ gateTaintKey: 'node-role.kubernetes.io/control-plane' }),
      'pools.json: pools[0].gateTaintKey must be a taint key prewarm may gate on, got "node-role.kubernetes.io/control-plane"',
    ],
    [file({ gateTaintKey: 'node.kubernetes.io/not-ready' }), 'pools.json: pools[0].gateTaintKey must be a taint key prewarm may gate on'],
    [file({ gateTaintKey: 'not a key' }), 'pools.json: pools[0].gateTaintKey must be a taint key prewarm may gate on, got "not a key"'],
  ])('rejects %s', (text, msg) => {
    expect(() => parsePoolsFile(text)).toThrow(msg);
  });
});
