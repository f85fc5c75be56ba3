import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../../src/cli/main.js';
import { formatDiagnostic } from '../../../src/imagecache/errors.js';
import { poolId } from '../../../src/contract/identity.js';
import { checkNodeMemory, podMemoryRequest } from '../../../src/synth/checks/memory.js';
import { checkObjectNames, checkPodNames, checkPoolObject, checkSharedObjects, type Manifest } from '../../../src/synth/checks/output.js';
import { bundleOfFiles, cache } from '../../helpers.js';

describe('checkObjectNames and checkPodNames', () => {
  const pod = (containers: string[], init: string[] = [], volumes: string[] = []) => ({
    template: {
      spec: {
        containers: containers.map((name) => ({ name })),
        initContainers: init.map((name) => ({ name })),
        volumes: volumes.map((name) => ({ name })),
      },
    },
  });
  const obj = (kind: string, name: string, namespace?: string, spec?: unknown): Manifest =>
    ({
      apiVersion: kind === 'ClusterRole' ? 'rbac.authorization.k8s.io/v1' : 'v1',
      kind,
      metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
      ...(spec === undefined ? {} : { spec }),
    }) as Manifest;

  it.each([
    {
      case: 'distinct objects, containers and volumes',
      manifests: [
        obj('ConfigMap', 'a', 'x'),
        obj('ConfigMap', 'a', 'y'),
        obj('Secret', 'a', 'x'),
        obj('ClusterRole', 'a'),
        obj('DaemonSet', 'd', 'x', pod(['a', 'b'], ['c'], ['v', 'w'])),
      ],
      expected: [],
    },
    {
      case: 'one object twice in a namespace',
      manifests: [obj('ConfigMap', 'a', 'x'), obj('ConfigMap', 'a', 'x')],
      expected: ['ConfigMap x/a: error: ConfigMap x/a is emitted twice; the second would replace the first'],
    },
    {
      case: 'a cluster-scoped object twice',
      manifests: [obj('ClusterRole', 'r'), obj('ClusterRole', 'r')],
      expected: ['ClusterRole r: error: ClusterRole r is emitted twice; the second would replace the first'],
    },
    {
      case: 'two containers of one name',
      manifests: [obj('DaemonSet', 'd', 'x', pod(['a', 'b', 'a']))],
      expected: ['DaemonSet x/d: error: DaemonSet x/d has two containers named "a"; the apiserver would refuse it'],
    },
    {
      case: 'an init container named like a container',
      manifests: [obj('DaemonSet', 'd', 'x', pod(['a'], ['a']))],
      expected: ['DaemonSet x/d: error: DaemonSet x/d has two containers named "a"; the apiserver would refuse it'],
    },
    {
      case: 'two volumes of one name',
      manifests: [obj('DaemonSet', 'd', 'x', pod(['a'], [], ['v', 'v']))],
      expected: ['DaemonSet x/d: error: DaemonSet x/d has two volumes named "v"; the apiserver would refuse it'],
    },
  ])('$case', ({ manifests, expected }) => {
    const got = [...checkObjectNames(manifests), ...manifests.flatMap((m) => checkPodNames(m))];
    expect(got.map(formatDiagnostic)).toEqual(expected);
  });
});

describe('checkPoolObject, checkSharedObjects and checkNodeMemory', () => {
  const MIB = 1024 * 1024;
  const bundle = bundleOfFiles([
    cache('all.yaml', 'all', 'ml', '  cacheSpec:\n  - images: [redis:7]\n'),
    cache('web.yaml', 'web', 'ml', '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {tier: web}\n'),
    cache('db.yaml', 'db', 'other', '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {tier: db}\n'),
  ]);
  const [all, web, db] = ['all.yaml', 'web.yaml', 'db.yaml'].map((f) => bundle.pools.find((p) => p.origins[0]?.location.file === f));
  if (all === undefined || web === undefined || db === undefined) throw new Error('pools missing');
  const id = (p: typeof all) => `${p.namespace}/${poolId(p)}`;

  /** A pull DaemonSet of `pool` whose containers request `memory` each (the init container 8Mi). */
  const ds = (pool: typeof all, ...memory: string[]): Manifest => puller(pool, '', ...memory);
  /** A burst puller of `pool` (its holder when `lane` is empty): named apart, labelled as a member. */
  const puller = (pool: typeof all, lane: string, ...memory: string[]): Manifest => ({
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {
      name: `prewarm-${poolId(pool)}${lane === '' ? '' : `-puller-${lane}`}`,
      namespace: pool.namespace,
      labels: { 'prewarm.dev/pool-member': poolId(pool) },
    },
    spec: {
      template: {
        spec: {
          initContainers: [{ name: 'h', resources: { requests: { memory: '8Mi' } } }],
          containers: memory.map((m, i) => ({ name: `c${i}`, resources: { requests: { memory: m } } })),
        },
      },
    },
  });
  const configMap = (namespace: string, dataBytes: number): Manifest => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'prewarm-pools', namespace },
    data: { 'pools.json': 'x'.repeat(dataBytes) },
  });
  /** The pool a test manifest belongs to, as the construct that renders it knows it. */
  const poolOfManifest = (m: Manifest) => bundle.pools.find((p) => p.id === m.metadata.labels?.['prewarm.dev/pool-member']);
  /** What synth checks of these objects: each pool's DaemonSet itself, then the rest and the memory over the whole output. */
  const limits = (manifests: Manifest[]) => {
    const members = manifests.flatMap((m) => {
      const pool = poolOfManifest(m);
      return pool === undefined ? [] : [{ pool, manifest: m }];
    });
    return [
      ...members.flatMap(({ pool, manifest }) => checkPoolObject(manifest, pool)),
      ...checkSharedObjects(
        manifests.filter((m) => poolOfManifest(m) === undefined),
        bundle.pools.length,
      ),
      ...checkNodeMemory(
        members.map(({ pool, manifest }) => ({ pool, bytes: podMemoryRequest(manifest.spec?.template?.spec ?? {}) })),
        1024 * MIB,
      ),
    ];
  };
  /** `m` grown by an annotation to exactly `bytes` of JSON. */
  const sized = (m: Manifest, bytes: number): Manifest => {
    const base = { ...m, metadata: { ...m.metadata, annotations: { pad: '' } } };
    const pad = bytes - Buffer.byteLength(JSON.stringify(base));
    return { ...base, metadata: { ...base.metadata, annotations: { pad: 'x'.repeat(pad) } } } as Manifest;
  };

  it.each([
    { case: 'small objects, little memory', manifests: [ds(all, '4Mi'), ds(web, '4Mi'), configMap('ml', 1000)], expected: [] },
    {
      case: 'ConfigMap data of exactly 1 MiB',
      manifests: [configMap('ml', MIB)],
      expected: [/^ConfigMap prewarm-pools: warning: ConfigMap prewarm-pools in namespace ml is 1 MiB/],
    },
    {
      case: 'ConfigMap data over 1 MiB, alike in two namespaces: reported once',
      manifests: [configMap('ml', MIB + 1), configMap('other', MIB + 1)],
      expected: [
        /^ConfigMap prewarm-pools: error: ConfigMap prewarm-pools in namespaces ml, other would hold 1 MiB \(1,048,577 bytes\) of data; the apiserver refuses a ConfigMap over 1 MiB \(1,048,576 bytes\): it lists all 3 pools of the bundle/,
        /^ConfigMap prewarm-pools: warning: ConfigMap prewarm-pools in namespaces ml, other is 1 MiB \(1,048,\d{3} bytes\) as JSON: client-side "kubectl apply"/,
      ],
    },
    { case: 'a DaemonSet of exactly 256 KiB', manifests: [sized(ds(web, '4Mi'), 256 * 1024)], expected: [] },
    {
      case: 'a DaemonSet over 256 KiB: client-side apply would fail',
      manifests: [sized(ds(web, '4Mi'), 256 * 1024 + 1)],
      expected: [
        new RegExp(
          `^web\\.yaml:6:5: warning: document 1: spec\\.cacheSpec\\[0\\]: DaemonSet ml/prewarm-${poolId(web)} is 256 KiB \\(262,145 bytes\\) as JSON: client-side "kubectl apply" and Argo CD without ServerSideApply=true will fail on it.*apply it server-side; split the pool's 1 images across pools`,
        ),
      ],
    },
    {
      case: 'a DaemonSet of exactly 1.5 MiB',
      manifests: [sized(ds(web, '4Mi'), 1.5 * MIB)],
      expected: [/^web\.yaml:6:5: warning: .* is 1\.5 MiB/],
    },
    {
      case: 'a DaemonSet over 1.5 MiB: the apiserver refuses it',
      manifests: [sized(ds(web, '4Mi'), 1.5 * MIB + 1)],
      expected: [
        new RegExp(
          `^web\\.yaml:6:5: error: document 1: spec\\.cacheSpec\\[0\\]: DaemonSet ml/prewarm-${poolId(web)} would be 1\\.5 MiB \\(1,572,865 bytes\\) as JSON; the apiserver refuses an object over about 1\\.5 MiB \\(1,572,864 bytes\\)`,
        ),
      ],
    },
    {
      case: "a burst puller over 1.5 MiB: refused at its pool's entry, as its holder would be",
      manifests: [sized(puller(web, '1', '4Mi'), 1.5 * MIB + 1)],
      expected: [
        new RegExp(
          `^web\\.yaml:6:5: error: document 1: spec\\.cacheSpec\\[0\\]: DaemonSet ml/prewarm-${poolId(web)}-puller-1 would be 1\\.5 MiB \\(1,572,865 bytes\\) as JSON; .*split the pool's 1 images across pools`,
        ),
      ],
    },
    {
      case: 'pools sharing a node request exactly 1 GiB',
      manifests: [ds(all, '512Mi'), ds(web, '256Mi', '256Mi'), ds(db, '512Mi')],
      expected: [],
    },
    {
      case: 'pools sharing a node request over 1 GiB: an every-node pool adds to a selected one',
      manifests: [ds(all, '512Mi'), ds(web, '256Mi', '256Mi', '1Mi'), ds(db, '4Mi')],
      expected: [
        new RegExp(
          `^web\\.yaml:6:5: error: .*a node labelled tier=web runs the pull pods of ${id(all)}, ${id(web)}, which request 1 GiB of memory there while it warms \\(holders and burst pullers\\), over 1 GiB, the most this invocation allows on one node \\(--max-node-memory\\): every image reserves 4 MiB`,
        ),
      ],
    },
    {
      case: 'an every-node pool over 1 GiB alone',
      manifests: [ds(all, '1025Mi')],
      expected: [new RegExp(`^all\\.yaml:6:5: error: .*every node runs the pull pods of ${id(all)}, which request 1 GiB of memory`)],
    },
    { case: 'pools whose selectors exclude each other never add up', manifests: [ds(web, '700Mi'), ds(db, '700Mi')], expected: [] },
    {
      case: "a warming node runs the holder and every burst puller: the pullers' requests count",
      manifests: [ds(all, '512Mi'), puller(all, '1', '256Mi'), puller(all, '2', '257Mi')],
      expected: [
        new RegExp(
          `^all\\.yaml:6:5: error: .*every node runs the pull pods of ${id(all)}, which request 1 GiB of memory there while it warms \\(holders and burst pullers\\)`,
        ),
      ],
    },
    {
      case: 'the same requests without the pullers stay under the limit',
      manifests: [ds(all, '512Mi')],
      expected: [],
    },
    {
      case: 'the init container counts when it requests more than the containers',
      manifests: [
        {
          ...ds(web),
          spec: { template: { spec: { initContainers: [{ name: 'h', resources: { requests: { memory: '2G' } } }], containers: [] } } },
        },
      ],
      expected: [/request 1\.86 GiB/],
    },
  ])('$case', ({ manifests, expected }) => {
    const got = limits(manifests).map(formatDiagnostic);
    expect(got).toHaveLength(expected.length);
    expected.forEach((pattern, i) => expect(got[i]).toMatch(pattern));
  });

  it('the CLI refuses 200 images in one pool (1,648 MiB on a warming node) by default, and writes them under --max-node-memory 2Gi', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-limits-'));
    const images = Array.from({ length: 200 }, (_, i) => `registry.example.com/team/app-${i}:v1`).join(', ');
    await writeFile(join(dir, 'big.yaml'), cache('', 'big', 'ml', `  cacheSpec:\n  - images: [${images}]\n`).text);
    const synth = async (...extra: string[]) => {
      let stderr = '';
      const code = await run(['synth', join(dir, 'big.yaml'), '-o', join(dir, 'out'), ...extra], {
        stdout: () => undefined,
        stderr: (t) => (stderr += t),
      });
      return { code, stderr };
    };
    const refused = await synth();
    expect(refused.code, refused.stderr).toBe(1);
    // The holder: 200 containers of 4 MiB and the sidecar's 48 MiB (848 MiB, under the bound);
    // the default 4 lanes' 3 pullers: the same 200 images again (800 MiB).
    expect(refused.stderr).toContain(
      `${join(dir, 'big.yaml')}:6:5: error: document 1: spec.cacheSpec[0]: every node runs the pull pods of ml/all-`,
    );
    expect(refused.stderr).toContain(
      `which request ${(1648 / 1024).toFixed(2)} GiB of memory there while it warms (holders and burst pullers), over 1 GiB, the most this invocation allows on one node (--max-node-memory)`,
    );
    expect(await readdir(dir)).toEqual(['big.yaml']);
    const allowed = await synth('--max-node-memory', '2Gi');
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).not.toContain('--max-node-memory');
    expect(await readdir(join(dir, 'out'))).toContain('prewarm-ns-ml.k8s.yaml');
  });
});

describe('podMemoryRequest', () => {
  const c = (name: string, memory: string, restartPolicy?: string) => ({
    name,
    resources: { requests: { memory } },
    ...(restartPolicy === undefined ? {} : { restartPolicy }),
  });
  const Mi = 2 ** 20;
  it.each([
    { case: 'containers only: their sum', pod: { containers: [c('a', '4Mi'), c('b', '6Mi')] }, mib: 10 },
    {
      case: 'a plain init container larger than the containers',
      pod: { initContainers: [c('h', '64Mi')], containers: [c('a', '4Mi')] },
      mib: 64,
    },
    {
      case: 'a native sidecar runs beside the containers: added to their sum',
      pod: { initContainers: [c('s', '48Mi', 'Always'), c('h', '8Mi')], containers: [c('a', '4Mi'), c('b', '4Mi')] },
      mib: 56,
    },
    {
      case: 'an init container after a native sidecar runs beside it (KEP-753)',
      pod: { initContainers: [c('s', '48Mi', 'Always'), c('h', '100Mi')], containers: [c('a', '4Mi')] },
      mib: 148,
    },
    {
      case: 'an init container before the native sidecar does not',
      pod: { initContainers: [c('h', '100Mi'), c('s', '48Mi', 'Always')], containers: [c('a', '4Mi')] },
      mib: 100,
    },
    { case: 'nothing requested', pod: {}, mib: 0 },
  ])('$case', ({ pod, mib }) => {
    expect(podMemoryRequest(pod)).toBe(mib * Mi);
  });
});
