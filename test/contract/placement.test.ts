/**
 * The placement contract: exact Kubernetes semantics, and a round trip. What synth renders into
 * the DaemonSet (node affinity + tolerations), evaluated as Kubernetes evaluates it, must agree
 * with what the sidecar evaluates after pools.json went through render and parse.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DAEMONSET_TOLERATIONS,
  placementOf,
  STARTUP_TOLERATIONS,
  withStartupTolerations,
  placementSelectsHealthyNode,
  placementSelectsNode,
  renderNodeAffinity,
  renderTolerations,
  tolerates,
  type NodeSelectorRequirement,
  type Placement,
  type PlacementNode,
  type Taint,
  type Toleration,
} from '../../src/contract/placement.js';
import { parsePoolsFile, renderPoolsFile } from '../../src/contract/pools-file.js';
import { poolEntryOf } from '../../src/synth/charts.js';
import { PullDaemonSet } from '../../src/synth/pull-daemonset.js';
import { Testing } from 'cdk8s';
import { buildBundle } from '../../src/imagecache/bundle.js';
import { parseFiles } from '../../src/imagecache/parse.js';

const GATE = 'prewarm.dev/warming';
const t = (key: string, effect = 'NoSchedule', value?: string): Taint => ({ key, effect, ...(value === undefined ? {} : { value }) });
const node = (labels: Record<string, string>, taints: Taint[] = []): PlacementNode => ({ metadata: { labels }, spec: { taints } });

describe('tolerates (core/v1 Toleration.ToleratesTaint)', () => {
  it.each<[Toleration, Taint, boolean]>([
    [{ operator: 'Exists' }, t('x'), true],
    [{ operator: 'Exists' }, t('x', 'NoExecute', 'v'), true],
    [{ operator: 'Exists', effect: 'NoExecute' }, t('x', 'NoExecute'), true],
    [{ operator: 'Exists', effect: 'NoExecute' }, t('x', 'NoSchedule'), false],
    [{ key: 'x', operator: 'Exists' }, t('x', 'PreferNoSchedule', 'any'), true],
    [{ key: 'x', operator: 'Exists' }, t('y'), false],
    [{ key: 'x', operator: 'Equal', value: 'v' }, t('x', 'NoSchedule', 'v'), true],
    [{ key: 'x', operator: 'Equal', value: 'v' }, t('x', 'NoSchedule', 'w'), false],
    [{ key: 'x', operator: 'Equal', value: 'v' }, t('x'), false],
    [{ key: 'x', operator: 'Equal' }, t('x'), true],
    [{ key: 'x', operator: 'Equal', value: 'v', effect: 'NoSchedule' }, t('x', 'NoExecute', 'v'), false],
    [{ key: 'x', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 }, t('x', 'NoExecute'), true],
  ])('%j tolerates %j: %s', (toleration, taint, want) => {
    expect(tolerates(toleration, taint)).toBe(want);
  });
});

describe('placementOf', () => {
  it('sorts the selector and the tolerations, drops duplicates and adds the gate toleration last', () => {
    const p = placementOf(
      { z: '1', a: '2' },
      [
        { key: 'b', operator: 'Exists' },
        { key: 'a', operator: 'Exists' },
        { key: 'b', operator: 'Exists' },
      ],
      GATE,
    );
    expect(Object.keys(p.nodeSelector)).toEqual(['a', 'z']);
    expect(p.tolerations).toEqual([
      { key: 'a', operator: 'Exists' },
      { key: 'b', operator: 'Exists' },
      { key: GATE, operator: 'Exists' },
    ]);
  });
  it.each<[string, Toleration[], boolean]>([
    ['no tolerations', [], true],
    ['a toleration of every taint', [{ operator: 'Exists' }], false],
    ['the gate key with every effect', [{ key: GATE, operator: 'Exists' }], false],
    ['the gate key with one effect only', [{ key: GATE, operator: 'Exists', effect: 'NoSchedule' }], true],
    ['every key with one effect only', [{ operator: 'Exists', effect: 'NoExecute' }], true],
    ['the gate key with a value only', [{ key: GATE, operator: 'Equal', value: 'x' }], true],
  ])('adds the gate toleration with %s: %s', (_name, tolerations, added) => {
    const p = placementOf({}, tolerations, GATE);
    expect(p.tolerations.some((x) => x.key === GATE && x.operator === 'Exists' && x.effect === undefined)).toBe(
      added || tolerations.some((x) => x.key === GATE && x.effect === undefined && x.operator === 'Exists'),
    );
    expect(p.tolerations.length).toBe(tolerations.length + (added ? 1 : 0));
  });
  it('adds nothing for a pool that does not gate', () => {
    expect(placementOf({}, [], '').tolerations).toEqual([]);
    expect(placementOf({}, []).tolerations).toEqual([]);
  });
});

describe('rendering', () => {
  it('puts every selector label into one term, so they are ANDed', () => {
    const p = placementOf({ tier: 'backend', 'topology.kubernetes.io/zone': 'eu-west-1a' }, []);
    expect(renderNodeAffinity(p)?.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).toEqual([
      {
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['backend'] },
          { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-west-1a'] },
        ],
      },
    ]);
  });
  it('adds extra requirements to the same term', () => {
    const extra: NodeSelectorRequirement[] = [{ key: 'prewarm.dev/x', operator: 'NotIn', values: ['warm', 'partial'] }];
    expect(
      renderNodeAffinity(placementOf({ a: 'b' }, []), extra)?.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
    ).toEqual([{ matchExpressions: [{ key: 'a', operator: 'In', values: ['b'] }, ...extra] }]);
    expect(renderNodeAffinity(placementOf({}, []))).toBeUndefined();
  });
  it('keeps tolerations whole: key, operator, value, effect, tolerationSeconds', () => {
    const given: Toleration[] = [
      { operator: 'Exists', effect: 'NoExecute' },
      { key: 'spot', operator: 'Equal', value: 'true', effect: 'NoExecute', tolerationSeconds: 30 },
    ];
    expect(renderTolerations(placementOf({}, given))).toEqual(given);
  });
  it('renders a multi-label kube-fledged ImageCache into one term through the real construct', () => {
    const text = [
      'apiVersion: kubefledged.io/v1alpha2',
      'kind: ImageCache',
      'metadata: {name: imagecache1, namespace: kube-fledged}',
      'spec:',
      '  cacheSpec:',
      '  - images: [ghcr.io/jitesoft/nginx:1.23.1]',
      '    nodeSelector: {tier: backend, topology.kubernetes.io/zone: eu-west-1a}',
    ].join('\n');
    const parsed = parseFiles([{ path: 'kf.yaml', text }]);
    expect(parsed.diagnostics).toEqual([]);
    const pool = buildBundle(parsed.caches).bundle.pools[0];
    if (pool === undefined) throw new Error('no pool');
    const chart = Testing.chart();
    new PullDaemonSet(chart, 'ds', { pool });
    const ds = Testing.synth(chart).find((o) => o.kind === 'DaemonSet');
    const spec = ds.spec.template.spec;
    expect(spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).toHaveLength(1);
    expect(spec.tolerations).toEqual([{ operator: 'Exists' }]);
  });
});

describe('withStartupTolerations (early pullers)', () => {
  /** A node between registration and Ready, as clouds and Karpenter have it, gated. */
  const starting = node({ tier: 'backend', zone: 'a' }, [
    t('node.kubernetes.io/not-ready'),
    t('node.kubernetes.io/network-unavailable'),
    t('node.cloudprovider.kubernetes.io/uninitialized', 'NoSchedule', 'true'),
    t('karpenter.sh/unregistered', 'NoExecute'),
    t(GATE),
  ]);
  const pool = placementOf({ tier: 'backend', zone: 'a' }, [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }], GATE);

  it('adds the start-up taints whole, after the pool tolerations and the gate, and keeps the selector', () => {
    const early = withStartupTolerations(pool);
    expect(early.nodeSelector).toBe(pool.nodeSelector);
    expect(renderTolerations(early)).toEqual([
      { key: 'gpu', operator: 'Exists', effect: 'NoSchedule' },
      { key: GATE, operator: 'Exists' },
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'karpenter.sh/unregistered', operator: 'Exists', effect: 'NoExecute' },
    ]);
  });

  it('places early pullers on a starting node, where the pool itself is not placed', () => {
    expect(placementSelectsNode(withStartupTolerations(pool), starting)).toBe(true);
    expect(placementSelectsNode(pool, starting)).toBe(false);
    // Each start-up taint alone keeps the pool away, and is tolerated by the early placement.
    for (const taint of starting.spec?.taints ?? []) {
      if (taint.key === GATE) continue;
      const one = node({ tier: 'backend', zone: 'a' }, [taint]);
      expect(placementSelectsNode(pool, one), taint.key).toBe(false);
      expect(placementSelectsNode(withStartupTolerations(pool), one), taint.key).toBe(true);
    }
    // The selector still decides.
    expect(placementSelectsNode(withStartupTolerations(pool), node({ tier: 'backend', zone: 'b' }, []))).toBe(false);
  });

  it('adds a start-up toleration once: one the pool already has stays where it is', () => {
    const given = placementOf({}, [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }]);
    const early = withStartupTolerations(given);
    expect(early.tolerations.filter((x) => x.key === 'node.kubernetes.io/not-ready')).toHaveLength(1);
    expect(early.tolerations).toHaveLength(STARTUP_TOLERATIONS.length);
    expect(early.tolerations[0]?.key).toBe('node.kubernetes.io/not-ready');
  });
});

describe('placementSelectsNode (the DaemonSet controller)', () => {
  const backend = placementOf({ tier: 'backend', zone: 'a' }, [], GATE);
  it.each<[string, Placement, PlacementNode, boolean]>([
    ['all labels match', backend, node({ tier: 'backend', zone: 'a', other: 'x' }), true],
    ['one label of two matches (AND, not OR)', backend, node({ tier: 'backend', zone: 'b' }), false],
    ['the other label of two matches', backend, node({ zone: 'a' }), false],
    ['no selector selects every untainted node', placementOf({}, []), node({}), true],
    ['its own gate taint is tolerated', backend, node({ tier: 'backend', zone: 'a' }, [t(GATE)]), true],
    ['an untolerated NoSchedule taint', backend, node({ tier: 'backend', zone: 'a' }, [t('dedicated')]), false],
    ['an untolerated NoExecute taint', backend, node({ tier: 'backend', zone: 'a' }, [t('dedicated', 'NoExecute')]), false],
    [
      'an untolerated PreferNoSchedule taint never keeps a daemon pod away',
      backend,
      node({ tier: 'backend', zone: 'a' }, [t('soft', 'PreferNoSchedule')]),
      true,
    ],
    [
      'not-ready NoExecute is tolerated by every daemon pod',
      placementOf({}, []),
      node({}, [t('node.kubernetes.io/not-ready', 'NoExecute')]),
      true,
    ],
    [
      'not-ready NoSchedule is not (the default toleration has effect NoExecute)',
      placementOf({}, []),
      node({}, [t('node.kubernetes.io/not-ready')]),
      false,
    ],
    ['unschedulable NoSchedule is tolerated', placementOf({}, []), node({}, [t('node.kubernetes.io/unschedulable')]), true],
    ['disk-pressure NoExecute is not', placementOf({}, []), node({}, [t('node.kubernetes.io/disk-pressure', 'NoExecute')]), false],
    [
      'network-unavailable is tolerated only by hostNetwork pods',
      placementOf({}, []),
      node({}, [t('node.kubernetes.io/network-unavailable')]),
      false,
    ],
    [
      'a keyless toleration with an effect tolerates only that effect',
      placementOf({}, [{ operator: 'Exists', effect: 'NoExecute' }]),
      node({}, [t('x')]),
      false,
    ],
    [
      '… and tolerates that effect for any key',
      placementOf({}, [{ operator: 'Exists', effect: 'NoExecute' }]),
      node({}, [t('x', 'NoExecute')]),
      true,
    ],
    [
      'an Equal toleration needs the value',
      placementOf({}, [{ key: 'k', operator: 'Equal', value: 'v' }]),
      node({}, [t('k', 'NoSchedule', 'w')]),
      false,
    ],
  ])('%s', (_name, p, n, want) => {
    expect(placementSelectsNode(p, n)).toBe(want);
  });
  it('for the gate, a node without its passing condition taints', () => {
    const p = placementOf({}, [], GATE);
    const flapping = node({}, [t('node.kubernetes.io/not-ready'), t('node.kubernetes.io/memory-pressure'), t(GATE)]);
    expect(placementSelectsNode(p, flapping)).toBe(false);
    expect(placementSelectsHealthyNode(p, flapping)).toBe(true);
    expect(placementSelectsHealthyNode(p, node({}, [t('node.kubernetes.io/not-ready'), t('dedicated')]))).toBe(false);
  });
  it('lists the DaemonSet controller defaults with their effects', () => {
    expect(DAEMONSET_TOLERATIONS.map((x) => `${x.key}:${x.effect}`)).toContain('node.kubernetes.io/unreachable:NoExecute');
    expect(DAEMONSET_TOLERATIONS.some((x) => x.key === 'node.kubernetes.io/network-unavailable')).toBe(false);
  });
});

/**
 * Kubernetes' own reading of a rendered pod spec, written from the API's definitions and not from
 * src/: terms are ORed, requirements within a term ANDed; the DaemonSet controller adds its default
 * tolerations and looks at NoSchedule and NoExecute taints only.
 */
function kubernetesPlaces(affinity: ReturnType<typeof renderNodeAffinity>, tolerations: readonly Toleration[], n: PlacementNode): boolean {
  const labels = n.metadata.labels ?? {};
  const terms = affinity?.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
  const matches = (r: NodeSelectorRequirement): boolean => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    if (r.operator === 'In') return has && (r.values ?? []).includes(labels[r.key] as string);
    if (r.operator === 'NotIn') return !has || !(r.values ?? []).includes(labels[r.key] as string);
    return r.operator === 'Exists' ? has : !has;
  };
  if (terms !== undefined && !terms.some((term) => term.matchExpressions.every(matches))) return false;
  const all = [...tolerations, ...DAEMONSET_TOLERATIONS];
  const ok = (taint: Taint): boolean =>
    all.some(
      (x) =>
        (x.effect === undefined || x.effect === taint.effect) &&
        (x.key === undefined || x.key === taint.key) &&
        (x.operator === 'Exists' || (x.value ?? '') === (taint.value ?? '')),
    );
  return (n.spec?.taints ?? []).filter((x) => x.effect === 'NoSchedule' || x.effect === 'NoExecute').every(ok);
}

const KEYS = [
  'tier',
  'zone',
  'gpu',
  GATE,
  'node.kubernetes.io/not-ready',
  'node.kubernetes.io/unschedulable',
  'node.kubernetes.io/disk-pressure',
];
const VALUES = ['a', 'b', ''];
const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
const effectArb = fc.option(fc.constantFrom(...EFFECTS), { nil: undefined });
const tolerationArb: fc.Arbitrary<Toleration> = fc.oneof(
  effectArb.map((effect): Toleration => ({ operator: 'Exists', ...(effect ? { effect } : {}) })),
  fc
    .tuple(fc.constantFrom(...KEYS), effectArb, fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }))
    .map(([key, effect, s]): Toleration => ({
      key,
      operator: 'Exists',
      ...(effect ? { effect } : {}),
      ...(effect === 'NoExecute' && s !== undefined ? { tolerationSeconds: s } : {}),
    })),
  fc
    .tuple(fc.constantFrom(...KEYS), fc.constantFrom('a', 'b'), effectArb)
    .map(([key, value, effect]): Toleration => ({ key, operator: 'Equal', value, ...(effect ? { effect } : {}) })),
);
const selectorArb = fc.dictionary(fc.constantFrom('tier', 'zone', 'gpu'), fc.constantFrom('a', 'b'), { maxKeys: 3 });
const nodeArb = fc
  .tuple(
    fc.dictionary(fc.constantFrom('tier', 'zone', 'gpu', 'other'), fc.constantFrom('a', 'b'), { maxKeys: 4 }),
    fc.array(
      fc
        .tuple(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), fc.constantFrom(...EFFECTS))
        .map(([key, value, effect]) => t(key, effect, value || undefined)),
      { maxLength: 3 },
    ),
  )
  .map(([labels, taints]) => node(labels, taints));

describe('round trip: render, then evaluate (property)', () => {
  it('the DaemonSet as Kubernetes reads it, the sidecar after pools.json, and the placement agree on every node', () => {
    fc.assert(
      fc.property(
        selectorArb,
        fc.array(tolerationArb, { maxLength: 4 }),
        fc.boolean(),
        fc.array(nodeArb, { minLength: 1, maxLength: 6 }),
        (selector, tolerations, gates, nodes) => {
          const placement = placementOf(selector, tolerations, gates ? GATE : '');
          const entry = { id: 'p', namespace: 'ns', nodeLabelKey: 'prewarm.dev/p', placement, gateTaintKey: gates ? GATE : '' };
          const parsed = parsePoolsFile(renderPoolsFile([entry])).pools[0];
          expect(parsed).toEqual(entry);
          for (const n of nodes) {
            const want = placementSelectsNode(placement, n);
            expect(kubernetesPlaces(renderNodeAffinity(placement), renderTolerations(placement), n)).toBe(want);
            expect(placementSelectsNode(parsed?.placement ?? placement, n)).toBe(want);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads a pools.json of an earlier release (no gate toleration, no tolerationSeconds) as the same placement', () => {
    const old = JSON.stringify({
      pools: [{ id: 'p', namespace: 'ns', nodeLabelKey: 'prewarm.dev/p', nodeSelector: { a: 'b' }, tolerations: [], gateTaintKey: GATE }],
    });
    const parsed = parsePoolsFile(old).pools[0];
    expect(parsed?.placement).toEqual(placementOf({ a: 'b' }, [], GATE));
  });

  it('synth output parses back into the pools synth computed', () => {
    const text = [
      'apiVersion: prewarm.dev/v1alpha1',
      'kind: ImageCache',
      'metadata: {name: c, namespace: ml}',
      'spec:',
      '  gate: {}',
      '  cacheSpec:',
      '  - images: [a.example/x:1]',
      '    nodeSelector: {tier: backend, zone: a}',
      '    tolerations: [{operator: Exists, effect: NoExecute}, {key: spot, operator: Equal, value: "true", effect: NoExecute, tolerationSeconds: 30}]',
      '  - images: [a.example/y:1]',
    ].join('\n');
    const parsed = parseFiles([{ path: 'c.yaml', text }]);
    expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const entries = buildBundle(parsed.caches).bundle.pools.map(poolEntryOf);
    expect(parsePoolsFile(renderPoolsFile(entries)).pools).toEqual([...entries].sort((a, b) => (a.id < b.id ? -1 : 1)));
  });
});
