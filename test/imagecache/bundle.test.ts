import { describe, expect, it } from 'vitest';
import { buildBundle, SETTING_RULES, type SettingRules } from '../../src/imagecache/bundle.js';
import { formatDiagnostic } from '../../src/imagecache/errors.js';
import type { PoolSettings } from '../../src/imagecache/model.js';
import { parseFiles, type SourceFile } from '../../src/imagecache/parse.js';

function cache(name: string, body: string, ns = 'ml'): SourceFile {
  return {
    path: `${name}.yaml`,
    text: `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n${body}`,
  };
}

function bundle(files: SourceFile[]) {
  const parsed = parseFiles(files);
  expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return buildBundle(parsed.caches);
}

describe('buildBundle', () => {
  it('merges ImageCaches with the same namespace, selector and tolerations into one pool, de-duplicating images', () => {
    const { bundle: b, diagnostics } = bundle([
      cache(
        'a',
        '  cacheSpec:\n  - images: [python:3.12, redis:7]\n    nodeSelector: {pool: gpu, zone: a}\n  imagePullSecrets: [{name: s1}]\n',
      ),
      cache(
        'b',
        '  cacheSpec:\n  - images: [docker.io/library/python:3.12]\n    nodeSelector: {zone: a, pool: gpu}\n  imagePullSecrets: [{name: s2}]\n',
      ),
    ]);
    expect(diagnostics).toEqual([]);
    expect(b.pools).toHaveLength(1);
    expect(b.pools[0]?.images.map((i) => i.canonical)).toEqual(['docker.io/library/python:3.12', 'docker.io/library/redis:7']);
    expect(b.pools[0]?.imagePullSecrets).toEqual(['s1', 's2']);
    expect(b.pools[0]?.sources).toEqual(['ml/a', 'ml/b']);
  });

  it.each([
    ['python:3.12', 'index.docker.io/library/python:3.12', 'docker.io/library/python:3.12'],
    ['vllm/vllm-openai:v0.5.0', 'index.docker.io/vllm/vllm-openai:v0.5.0', 'docker.io/vllm/vllm-openai:v0.5.0'],
    ['docker.io/library/busybox', 'index.docker.io/busybox:latest', 'docker.io/library/busybox:latest'],
  ])('gives %s and %s one container: Docker Hub under its legacy name is the same image', (a, b, canonical) => {
    const { bundle: bb } = bundle([cache('a', `  cacheSpec:\n  - images: [${a}]\n`), cache('b', `  cacheSpec:\n  - images: [${b}]\n`)]);
    expect(bb.pools.map((p) => p.images.map((i) => i.canonical))).toEqual([[canonical]]);
  });

  it('keeps registry-1.docker.io apart: containerd stores it under that name, so it is another image to warm', () => {
    const { bundle: bb } = bundle([cache('a', '  cacheSpec:\n  - images: [python:3.12, registry-1.docker.io/library/python:3.12]\n')]);
    expect(bb.pools[0]?.images.map((i) => i.canonical)).toEqual([
      'docker.io/library/python:3.12',
      'registry-1.docker.io/library/python:3.12',
    ]);
  });

  it('keeps pools apart by namespace and by tolerations', () => {
    const { bundle: b } = bundle([
      cache('a', '  cacheSpec:\n  - images: [redis:7]\n'),
      cache('b', '  cacheSpec:\n  - images: [redis:7]\n', 'other'),
      cache('c', '  cacheSpec:\n  - images: [redis:7]\n    tolerations: [{key: gpu, operator: Exists}]\n'),
    ]);
    expect(b.pools).toHaveLength(3);
    expect(b.namespaces).toEqual(['ml', 'other']);
  });

  it('does not depend on input order', () => {
    const files = [
      cache('a', '  cacheSpec:\n  - images: [b:1, a:1]\n    nodeSelector: {x: "1"}\n  - images: [c:1]\n'),
      cache('b', '  cacheSpec:\n  - images: [d:1]\n    nodeSelector: {x: "1"}\n'),
      cache('c', '  cacheSpec:\n  - images: [e:1]\n', 'zz'),
    ];
    const forward = bundle(files).bundle;
    const backward = bundle([...files].reverse()).bundle;
    expect(JSON.stringify(backward)).toBe(JSON.stringify(forward));
  });

  it.each([
    [
      '  rollout: {maxUnavailable: 1}\n',
      '  rollout: {maxUnavailable: 3}\n',
      'b.yaml:7:29: error: document 1: spec.rollout.maxUnavailable: ImageCache ml/b shares a pool with ml/a (a.yaml:7:29) but sets maxUnavailable differently: 3 vs 1; pool-wide settings must agree',
    ],
    [
      '  earlyPull: true\n',
      '  earlyPull: false\n',
      'b.yaml:7:14: error: document 1: spec.earlyPull: ImageCache ml/b shares a pool with ml/a (a.yaml:7:14) but sets earlyPull differently: false vs true; pool-wide settings must agree',
    ],
  ])('refuses pool-wide settings that disagree, pointing at both places (%s)', (first, second, message) => {
    const parsed = parseFiles([
      cache('a', `  cacheSpec:\n  - images: [redis:7]\n${first}`),
      cache('b', `  cacheSpec:\n  - images: [redis:6]\n${second}`),
    ]);
    expect(buildBundle(parsed.caches).diagnostics.map(formatDiagnostic)).toEqual([message]);
  });

  describe('kube-fledged input beside prewarm.dev ImageCaches in one pool', () => {
    const fledged = (name: string): SourceFile => ({
      path: `${name}.yaml`,
      text: `apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ml}\nspec:\n  cacheSpec:\n  - images: [nginx:1]\n    nodeSelector: {tier: web}\n`,
    });
    // The tolerations kube-fledged input gets, so both land on one pool.
    const prewarm = (name: string, settings: string) =>
      cache(name, `  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {tier: web}\n    tolerations: [{operator: Exists}]\n${settings}`);

    it.each([
      ['lanes: 1', '  lanes: 1\n', { lanes: 1 }],
      ['earlyPull: true', '  earlyPull: true\n', { earlyPull: true }],
      [
        'every pool-wide setting',
        '  lanes: 2\n  gate: {deadline: 5m}\n  refresh: {interval: 1h}\n  rollout: {maxUnavailable: 2}\n  priorityClassName: warm\n  earlyPull: true\n',
        { lanes: 2, gate: { deadlineSeconds: 300 }, refreshSeconds: 3600, maxUnavailable: 2, priorityClassName: 'warm', earlyPull: true },
      ],
    ])('take what the prewarm.dev ImageCache sets (%s), whatever the order', (_what, settings, expected) => {
      for (const names of [
        ['a', 'b'],
        ['b', 'a'],
      ] as const) {
        const files = [fledged(names[0]), prewarm(names[1], settings)];
        for (const order of [files, [...files].reverse()]) {
          const { bundle: b, diagnostics } = bundle(order);
          expect(diagnostics).toEqual([]);
          expect(b.pools).toHaveLength(1);
          expect(b.pools[0]?.settings).toMatchObject(expected);
          const located = Object.values(b.pools[0]?.settingLocations ?? {}).map((l) => l.file);
          expect(located.length).toBeGreaterThan(0);
          expect(new Set(located)).toEqual(new Set([`${names[1]}.yaml`]));
          expect(b.pools[0]?.sources).toEqual(['ml/a', 'ml/b']);
        }
      }
    });

    it('get the defaults (lanes 4, no early pulling) when no prewarm.dev ImageCache shares their pool', () => {
      const { bundle: b } = bundle([fledged('a'), fledged('b')]);
      expect(b.pools[0]?.settings.lanes).toBe(4);
      expect(b.pools[0]?.settings.earlyPull).toBe(false);
      expect(b.pools[0]?.pullerPlacement).toEqual(b.pools[0]?.placement);
    });

    it('never make prewarm.dev ImageCaches agree: those still must, defaults included', () => {
      const parsed = parseFiles([fledged('a'), prewarm('b', '  lanes: 1\n'), prewarm('c', '')]);
      expect(buildBundle(parsed.caches).diagnostics.map(formatDiagnostic)).toEqual([
        expect.stringContaining(
          'error: document 1: ImageCache ml/c shares a pool with ml/b (b.yaml:9:10) but sets lanes differently: 4 vs 1',
        ),
      ]);
    });
  });

  it('refuses one pool name for two different pools', () => {
    const parsed = parseFiles([
      cache('a', '  cacheSpec:\n  - pool: gpu\n    images: [redis:7]\n    nodeSelector: {a: "1"}\n'),
      cache('b', '  cacheSpec:\n  - pool: gpu\n    images: [redis:7]\n    nodeSelector: {a: "2"}\n'),
    ]);
    expect(buildBundle(parsed.caches).diagnostics.map((d) => d.message)).toEqual([
      'pool name "gpu" is already used by a pool with another namespace, node selector or tolerations (a.yaml:6:5)',
    ]);
  });

  it('refuses two names for one pool', () => {
    const parsed = parseFiles([
      cache('a', '  cacheSpec:\n  - pool: gpu\n    images: [redis:7]\n'),
      cache('b', '  cacheSpec:\n  - pool: accel\n    images: [redis:7]\n'),
    ]);
    expect(buildBundle(parsed.caches).diagnostics.map((d) => d.message)).toEqual([
      'pool is named "accel" here but "gpu" at a.yaml:6:5; one pool has one name',
    ]);
  });

  it('computes each pool id once: the explicit name, or selector values in key order plus a hash', () => {
    const { bundle: b } = bundle([
      cache('a', '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {zone: a, pool: gpu}\n'),
      cache('b', '  cacheSpec:\n  - pool: cpu\n    images: [redis:7]\n    nodeSelector: {pool: cpu}\n'),
    ]);
    expect(b.pools.map((p) => p.id)).toEqual(['cpu', expect.stringMatching(/^gpu-a-[0-9a-f]{8}$/)]);
  });

  // One row per setting: the table is keyed by PoolSettings, so a new setting needs a row too.
  const conflicts: Record<keyof PoolSettings, readonly [first: string, second: string, shown: string]> = {
    priorityClassName: ['  priorityClassName: high\n', '', 'unset vs "high"'],
    maxUnavailable: ['  rollout: {maxUnavailable: 1}\n', '  rollout: {maxUnavailable: "10%"}\n', '"10%" vs 1'],
    gate: [
      '  gate: {taintKey: example.com/warming, deadline: 5m}\n',
      '  gate: {enabled: false}\n',
      'unset vs {"taintKey":"example.com/warming","deadlineSeconds":300}',
    ],
    refreshSeconds: ['  refresh: {interval: 1h}\n', '  refresh: {interval: 1h30m}\n', '5400 vs 3600'],
    // The default (4) is a value: an ImageCache that leaves lanes out disagrees with one that sets 2.
    lanes: ['  lanes: 2\n', '', '4 vs 2'],
    // Off by default, and the default is a value too: one ImageCache cannot turn it on for another's images.
    earlyPull: ['  earlyPull: true\n', '', 'false vs true'],
  };
  it.each(Object.entries(conflicts))('reports a conflict on %s, and only that one', (field, [first, second, shown]) => {
    const parsed = parseFiles([
      cache('a', `  cacheSpec:\n  - images: [redis:7]\n${first}`),
      cache('b', `  cacheSpec:\n  - images: [redis:6]\n${second}`),
    ]);
    expect(parsed.diagnostics).toEqual([]);
    const messages = buildBundle(parsed.caches).diagnostics.map((d) => d.message);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^ImageCache ml\/b shares a pool with ml\/a \(a\.yaml:\d+:\d+\) but sets /);
    expect(messages[0]).toContain(` sets ${field} differently: ${shown}; pool-wide settings must agree`);
  });

  it('has a merge rule for every setting, and a setting without one does not compile', () => {
    expect(Object.keys(SETTING_RULES).sort()).toEqual(Object.keys(conflicts).sort());
    // @ts-expect-error a setting added to PoolSettings without a rule in SETTING_RULES fails typecheck
    const incomplete: SettingRules<PoolSettings & { readonly newSetting?: number }> = SETTING_RULES;
    expect(incomplete).toBe(SETTING_RULES);
  });

  describe('earlyPull', () => {
    const STARTUP_KEYS = [
      'node.kubernetes.io/not-ready',
      'node.kubernetes.io/network-unavailable',
      'node.cloudprovider.kubernetes.io/uninitialized',
      'karpenter.sh/unregistered',
    ];

    it('is off by default, and the pullers are then placed exactly as the holder', () => {
      const { bundle: b } = bundle([cache('a', '  cacheSpec:\n  - images: [redis:7]\n')]);
      expect(b.pools[0]?.settings.earlyPull).toBe(false);
      expect(b.pools[0]?.pullerPlacement).toEqual(b.pools[0]?.placement);
    });

    it('is one pool-wide setting when two ImageCaches of a pool agree; only the pullers get the start-up tolerations', () => {
      const { bundle: b, diagnostics } = bundle([
        cache('a', '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {pool: gpu, zone: a}\n  earlyPull: true\n'),
        cache('b', '  cacheSpec:\n  - images: [redis:6]\n    nodeSelector: {zone: a, pool: gpu}\n  earlyPull: true\n'),
      ]);
      expect(diagnostics).toEqual([]);
      expect(b.pools).toHaveLength(1);
      const pool = b.pools[0];
      expect(pool?.settings.earlyPull).toBe(true);
      expect(pool?.placement.tolerations.map((t) => t.key)).toEqual(['prewarm.dev/warming']);
      expect(pool?.pullerPlacement.tolerations.map((t) => t.key)).toEqual(['prewarm.dev/warming', ...STARTUP_KEYS]);
      expect(pool?.pullerPlacement.nodeSelector).toEqual({ pool: 'gpu', zone: 'a' });
    });
  });
});
