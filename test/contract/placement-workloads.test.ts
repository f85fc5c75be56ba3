/**
 * `workloadFitsPool` against an independent model of the scheduler's own rules (the NodeAffinity
 * and TaintToleration filters, written here from `component-helpers/.../nodeaffinity`,
 * `apimachinery/pkg/labels` and core/v1 `ToleratesTaint`). Every node a pool implies is built from
 * small domains that hold a value of every kind the generated workloads can tell apart, so "fits"
 * must mean every node passes, "none" that none does, and "partial" that some do and some do not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  workloadFitsPool,
  type PoolPlacement,
  type Toleration,
  type WorkloadPlacement,
  type WorkloadRequirement,
  type WorkloadTerm,
  type WorkloadToleration,
} from '../../src/contract/placement.js';

const GATE = 'prewarm.dev/warming';
const KEYS = ['a', 'b', 'c'];
/** Absent, each value a workload names, an integer in every cell its bounds cut, other spellings, a non-integer. */
const LABEL_VALUES = [undefined, '-2', '-1', '0', '1', '01', '001', '2', '02', '3', '03', '4', 'x', 'y'];
const NODE_NAMES = ['n1', 'n2', 'n3'];
const TAINT_VALUES = ['', 'v', 'w', 'z'];

// ---- the model ---------------------------------------------------------------------------------

interface ModelNode {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly { key: string; value: string; effect: string }[];
}

const goInt = (s: string): bigint | undefined => {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
};

/** labels.NewRequirement's checks: false when the requirement is refused. */
function validLabelRequirement(r: WorkloadRequirement): boolean {
  const vals = r.values ?? [];
  if (r.operator === 'In' || r.operator === 'NotIn') return vals.length > 0;
  if (r.operator === 'Exists' || r.operator === 'DoesNotExist') return vals.length === 0;
  if (r.operator === 'Gt' || r.operator === 'Lt') return vals.length === 1 && goInt(vals[0] as string) !== undefined;
  return false;
}

/** labels.Requirement.Matches. */
function requirementMatches(r: WorkloadRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const val = labels[r.key];
  const vals = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return has && vals.includes(val as string);
    case 'NotIn':
      return !has || !vals.includes(val as string);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default: {
      if (!has) return false;
      const l = goInt(val as string);
      const b = goInt(vals[0] as string);
      if (l === undefined || b === undefined) return false;
      return r.operator === 'Gt' ? l > b : l < b;
    }
  }
}

/** nodeSelectorTerm.match, with its parse errors making it match nothing. */
function termMatches(term: WorkloadTerm, node: ModelNode): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  if (!exprs.every(validLabelRequirement)) return false;
  const validField = (f: WorkloadRequirement) =>
    f.key === 'metadata.name' && (f.operator === 'In' || f.operator === 'NotIn') && (f.values ?? []).length === 1;
  if (!fields.every(validField)) return false;
  if (!exprs.every((r) => requirementMatches(r, node.labels))) return false;
  return fields.every((f) => (node.name === (f.values ?? [])[0]) === (f.operator === 'In'));
}

/** core/v1 Toleration.ToleratesTaint with the comparison operators off. */
function toleratesTaint(t: WorkloadToleration, taint: { key: string; value: string; effect: string }): boolean {
  if ((t.effect ?? '') !== '' && t.effect !== taint.effect) return false;
  if ((t.key ?? '') !== '' && t.key !== taint.key) return false;
  const op = t.operator ?? '';
  if (op === '' || op === 'Equal') return (t.value ?? '') === taint.value;
  return op === 'Exists';
}

/**
 * Whether the scheduler's NodeAffinity and TaintToleration filters let a pod on the node; for a pod
 * bound by nodeName, the kubelet's admission, which checks only NoExecute taints.
 */
function schedulerAdmits(w: WorkloadPlacement, node: ModelNode): boolean {
  if (w.nodeName !== undefined && w.nodeName !== node.name) return false;
  for (const [k, v] of Object.entries(w.nodeSelector ?? {})) if (node.labels[k] !== v) return false;
  if (w.requiredTerms !== undefined && !w.requiredTerms.some((t) => termMatches(t, node))) return false;
  const effects = w.nodeName === undefined ? ['NoSchedule', 'NoExecute'] : ['NoExecute'];
  return node.taints
    .filter((t) => effects.includes(t.effect))
    .every((taint) => (w.tolerations ?? []).some((t) => toleratesTaint(t, taint)));
}

/** Every labelling of a pool's node: the pool's labels, and any value (or none) for the other keys. */
function labellings(selector: Readonly<Record<string, string>>): Record<string, string>[] {
  let out: Record<string, string>[] = [{ ...selector }];
  for (const key of KEYS.filter((k) => !Object.hasOwn(selector, k))) {
    out = out.flatMap((l) => LABEL_VALUES.map((v) => (v === undefined ? l : { ...l, [key]: v })));
  }
  return out;
}

/** Every set of taints a pool's node may carry: one per key and effect its keyed NoSchedule/NoExecute tolerations name. */
function taintings(pool: PoolPlacement): { key: string; value: string; effect: string }[][] {
  const groups = new Map<string, { key: string; effect: string; values: string[] | 'any' }>();
  for (const t of pool.tolerations) {
    if (t.key === undefined || t.key === '' || t.key === GATE || (t.effect !== 'NoSchedule' && t.effect !== 'NoExecute')) continue;
    const id = `${t.key}/${t.effect}`;
    const g = groups.get(id) ?? { key: t.key, effect: t.effect, values: [] };
    if (t.operator === 'Exists') g.values = 'any';
    else if (g.values !== 'any') g.values.push(t.value ?? '');
    groups.set(id, g);
  }
  let out: { key: string; value: string; effect: string }[][] = [[]];
  for (const g of groups.values()) {
    const values = g.values === 'any' ? TAINT_VALUES : g.values;
    out = out.flatMap((ts) => values.map((value) => [...ts, { key: g.key, value, effect: g.effect }]));
  }
  return out;
}

/** The model's answer: does every node of the pool admit the workload, some, or none? */
function modelFit(pool: PoolPlacement, w: WorkloadPlacement): 'fits' | 'partial' | 'none' {
  // Nodes are every labelling with every name and every tainting; the product's verdicts follow
  // from each factor's, since a node passes exactly when its labels and name pass and its taints do.
  const byName = w.nodeName !== undefined || (w.requiredTerms ?? []).some((t) => (t.matchFields ?? []).length > 0);
  const labelPass = labellings(pool.nodeSelector).flatMap((labels) =>
    (byName ? NODE_NAMES : ['n3']).map((name) =>
      schedulerAdmits({ ...w, tolerations: [{ operator: 'Exists' }] }, { name, labels, taints: [] }),
    ),
  );
  const taintPass = taintings(pool).map((taints) =>
    schedulerAdmits(
      { tolerations: w.tolerations ?? [], ...(w.nodeName === undefined ? {} : { nodeName: 'n3' }) },
      { name: 'n3', labels: {}, taints },
    ),
  );
  const all = labelPass.every(Boolean) && taintPass.every(Boolean);
  const some = labelPass.some(Boolean) && taintPass.some(Boolean);
  return all ? 'fits' : some ? 'partial' : 'none';
}

// ---- generators --------------------------------------------------------------------------------

const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const KEY = fc.constantFrom(...KEYS);
const VALUE = fc.constantFrom('1', '2', '3', '01', 'x', '-1');
/** Mostly requirements the scheduler accepts, so that most terms can match; some it refuses. */
const requirement: fc.Arbitrary<WorkloadRequirement> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ key: KEY, operator: fc.constantFrom('In', 'NotIn'), values: fc.array(VALUE, { minLength: 1, maxLength: 2 }) }),
  },
  { weight: 3, arbitrary: fc.record({ key: KEY, operator: fc.constantFrom('Exists', 'DoesNotExist') }) },
  {
    weight: 3,
    arbitrary: fc.record({ key: KEY, operator: fc.constantFrom('Gt', 'Lt'), values: fc.tuple(fc.constantFrom('1', '2', '3', '-1')) }),
  },
  {
    weight: 1,
    arbitrary: fc.record(
      {
        key: KEY,
        operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Bogus'),
        values: fc.array(VALUE, { maxLength: 2 }),
      },
      { requiredKeys: ['key', 'operator'] },
    ),
  },
);
const field: fc.Arbitrary<WorkloadRequirement> = fc.record({
  key: fc.constantFrom('metadata.name', 'metadata.name', 'spec.unschedulable'),
  operator: fc.constantFrom('In', 'NotIn', 'Exists'),
  values: fc.array(fc.constantFrom('n1', 'n2'), { maxLength: 2 }),
});
const term: fc.Arbitrary<WorkloadTerm> = fc.record(
  { matchExpressions: fc.array(requirement, { maxLength: 3 }), matchFields: fc.array(field, { maxLength: 1 }) },
  { requiredKeys: ['matchExpressions'] },
);
const labelSelector = fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom('1', '2', '01', 'x'), { maxKeys: 2 });
const workloadToleration: fc.Arbitrary<WorkloadToleration> = fc.record(
  {
    key: fc.constantFrom('', 't1', 't2'),
    operator: fc.constantFrom('', 'Equal', 'Exists', 'Lt'),
    value: fc.constantFrom('', 'v', 'w'),
    effect: fc.constantFrom('', 'NoSchedule', 'NoExecute', 'PreferNoSchedule'),
  },
  { requiredKeys: [] },
);
const workload: fc.Arbitrary<WorkloadPlacement> = fc.record(
  {
    nodeSelector: labelSelector,
    requiredTerms: fc.array(term, { maxLength: 3 }),
    tolerations: fc.array(workloadToleration, { maxLength: 3 }),
    nodeName: fc.constantFrom('n1', 'n2'),
  },
  { requiredKeys: [] },
);
const poolToleration: fc.Arbitrary<Toleration> = fc
  .record({
    key: fc.constantFrom('t1', 't2', GATE, ''),
    operator: fc.constantFrom('Exists' as const, 'Equal' as const),
    value: fc.constantFrom('', 'v', 'w'),
    effect: opt(fc.constantFrom('NoSchedule' as const, 'NoExecute' as const, 'PreferNoSchedule' as const)),
  })
  .map(({ key, operator, value, effect }) => ({
    ...(key === '' ? {} : { key }),
    operator: key === '' ? ('Exists' as const) : operator,
    ...(operator === 'Equal' && key !== '' ? { value } : {}),
    ...(effect === undefined ? {} : { effect }),
  }));
const pool: fc.Arbitrary<PoolPlacement> = fc.record({
  nodeSelector: labelSelector,
  tolerations: fc.array(poolToleration, { maxLength: 3 }),
  gateTaintKey: fc.constant(GATE),
});

// ---- properties --------------------------------------------------------------------------------

describe('workloadFitsPool against the scheduler model', () => {
  it('says "fits" exactly when every node of the pool admits the workload, "none" when none does', () => {
    fc.assert(
      fc.property(pool, workload, (p, w) => {
        const got = workloadFitsPool(p, w);
        expect(got.fit).toBe(modelFit(p, w));
        if (got.fit !== 'fits') expect(got.reason).not.toBe('');
      }),
      { numRuns: 200 },
    );
  });

  it('agrees on label requirements alone, with many terms over the free keys', () => {
    const labelsOnly = fc.record({ requiredTerms: fc.array(term, { minLength: 1, maxLength: 5 }) });
    fc.assert(
      fc.property(labelSelector, labelsOnly, (selector, w) => {
        const p = { nodeSelector: selector, tolerations: [] };
        expect(workloadFitsPool(p, w).fit).toBe(modelFit(p, w));
      }),
      { numRuns: 100 },
    );
  });
});

describe('workloadFitsPool, cases', () => {
  const gpu: PoolPlacement = {
    nodeSelector: { 'nvidia.com/gpu.present': 'true' },
    tolerations: [
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
      { key: GATE, operator: 'Exists', effect: 'NoSchedule' },
    ],
    gateTaintKey: GATE,
  };
  const cpu: PoolPlacement = { nodeSelector: { pool: 'cpu' }, tolerations: [] };
  const gpuTol: WorkloadToleration = { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' };

  it.each<[string, PoolPlacement, WorkloadPlacement, string]>([
    ['no requirement fits every untainted pool', cpu, {}, 'fits'],
    [
      'no requirement on a tainted pool: none',
      gpu,
      {},
      "none: it does not tolerate the taint nvidia.com/gpu:NoSchedule that the pool's nodes carry",
    ],
    ['selects GPU nodes and tolerates: fits', gpu, { nodeSelector: { 'nvidia.com/gpu.present': 'true' }, tolerations: [gpuTol] }, 'fits'],
    ['a keyless Exists tolerates everything', gpu, { tolerations: [{ operator: 'Exists' }] }, 'fits'],
    [
      'tolerates one value of an Exists-tainted key: partial',
      gpu,
      { tolerations: [{ key: 'nvidia.com/gpu', operator: 'Equal', value: 'present', effect: 'NoSchedule' }] },
      'partial: it tolerates the taint nvidia.com/gpu:NoSchedule only with the value "present"',
    ],
    [
      'a label the pool does not fix: partial',
      cpu,
      { nodeSelector: { zone: 'a' } },
      "partial: it selects zone=a, which the pool's nodeSelector does not fix",
    ],
    [
      'a label the pool fixes otherwise: none',
      cpu,
      { nodeSelector: { pool: 'gpu' } },
      "none: it selects pool=gpu, and the pool's nodes have pool=cpu",
    ],
    [
      'NotIn a label the pool lacks: partial',
      cpu,
      { requiredTerms: [{ matchExpressions: [{ key: 'spot', operator: 'NotIn', values: ['true'] }] }] },
      'partial',
    ],
    [
      'NotIn another value of a fixed label: fits',
      cpu,
      { requiredTerms: [{ matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['gpu'] }] }] },
      'fits',
    ],
    [
      'Exists or DoesNotExist covers every node: fits',
      cpu,
      {
        requiredTerms: [
          { matchExpressions: [{ key: 'zone', operator: 'Exists' }] },
          { matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] },
        ],
      },
      'fits',
    ],
    ['an empty term matches nothing', cpu, { requiredTerms: [{}] }, 'none: its required node affinity has no term that matches any node'],
    [
      'Gt on a fixed label compares integers',
      { nodeSelector: { gen: '5' }, tolerations: [] },
      { requiredTerms: [{ matchExpressions: [{ key: 'gen', operator: 'Gt', values: ['4'] }] }] },
      'fits',
    ],
    [
      'Gt with a value that is no integer matches nothing',
      cpu,
      { requiredTerms: [{ matchExpressions: [{ key: 'pool', operator: 'Gt', values: ['x'] }] }] },
      'none',
    ],
    [
      'the gate taint never counts',
      { nodeSelector: {}, tolerations: [{ key: GATE, operator: 'Exists', effect: 'NoExecute' }], gateTaintKey: GATE },
      {},
      'fits',
    ],
    [
      'PreferNoSchedule never keeps a pod away',
      { nodeSelector: {}, tolerations: [{ key: 'x', operator: 'Exists', effect: 'PreferNoSchedule' }] },
      {},
      'fits',
    ],
    [
      'a pod bound to a node by name: partial',
      cpu,
      { nodeName: 'node-1' },
      "partial: it is bound to node node-1, which the pool's nodeSelector does not fix",
    ],
    [
      'a pod bound by name skips the scheduler: the kubelet ignores NoSchedule taints',
      { nodeSelector: {}, tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] },
      { nodeName: 'node-1' },
      "partial: it is bound to node node-1, which the pool's nodeSelector does not fix",
    ],
    [
      'a pod bound by name must still tolerate NoExecute taints',
      { nodeSelector: {}, tolerations: [{ key: 'spot', operator: 'Exists', effect: 'NoExecute' }] },
      { nodeName: 'node-1' },
      "none: it does not tolerate the taint spot:NoExecute that the pool's nodes carry",
    ],
  ])('%s', (_, p, w, want) => {
    const got = workloadFitsPool(p, w);
    const text = got.fit === 'fits' ? 'fits' : `${got.fit}: ${got.reason}`;
    if (want.includes(':')) expect(text).toBe(want);
    else expect(got.fit).toBe(want);
  });
});
