/**
 * Placement: where a pool's pull pods run, computed once. The DaemonSet's affinity and tolerations
 * and the sidecar's pools.json view are both rendered from it, so they cannot disagree. Kubernetes
 * semantics are exact (the DaemonSet controller's predicate); see docs/architecture.md (The pool).
 */
import { compareStrings } from './order.js';

/** A taint effect. */
export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

/** A core/v1 Toleration with the operators the spec accepts. */
export interface Toleration {
  /** Empty or absent matches every key (only with `Exists`). */
  readonly key?: string;
  readonly operator: 'Exists' | 'Equal';
  readonly value?: string;
  /** Absent matches every effect. */
  readonly effect?: TaintEffect;
  /** Only with `NoExecute`: how long a pod stays bound after the taint appears. */
  readonly tolerationSeconds?: number;
}

/** A core/v1 Taint, as observed on a node. */
export interface Taint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
}

/** Exact-match node labels, all of which a node must carry (ANDed). */
export type NodeSelector = Readonly<Record<string, string>>;

/** Where a pool's pods run: one node selector and one list of tolerations. */
export interface Placement {
  /** Sorted by key; empty selects every node. */
  readonly nodeSelector: NodeSelector;
  /** Spec tolerations de-duplicated and sorted, then the gate toleration last (moving it would roll every pod). */
  readonly tolerations: readonly Toleration[];
}

/** What the predicate reads of a node. */
export interface PlacementNode {
  readonly metadata: { readonly labels?: Readonly<Record<string, string>> | undefined };
  readonly spec?: { readonly taints?: readonly Taint[] | undefined } | undefined;
}

/** kube-fledged's pull Jobs tolerate every taint; its ImageCaches, read or migrated, do too. */
export const TOLERATE_ALL: readonly Toleration[] = Object.freeze([Object.freeze({ operator: 'Exists' as const })]);

/**
 * The tolerations the DaemonSet controller adds to every daemon pod off the host network
 * (`AddOrUpdateDaemonPodTolerations`); key and effect both matter.
 */
export const DAEMONSET_TOLERATIONS: readonly Toleration[] = Object.freeze(
  (
    [
      ['node.kubernetes.io/not-ready', 'NoExecute'],
      ['node.kubernetes.io/unreachable', 'NoExecute'],
      ['node.kubernetes.io/disk-pressure', 'NoSchedule'],
      ['node.kubernetes.io/memory-pressure', 'NoSchedule'],
      ['node.kubernetes.io/pid-pressure', 'NoSchedule'],
      ['node.kubernetes.io/unschedulable', 'NoSchedule'],
    ] as const
  ).map(([key, effect]) => Object.freeze({ key, operator: 'Exists' as const, effect })),
);

/**
 * The taints a node carries between registration and Ready, which an early puller tolerates
 * (not-ready, network-unavailable, cloud-provider uninitialized, Karpenter's unregistered). Kept
 * whole, without tolerationSeconds. See docs/architecture.md (Early pullers).
 */
export const STARTUP_TOLERATIONS: readonly Toleration[] = Object.freeze(
  (
    [
      ['node.kubernetes.io/not-ready', 'NoSchedule'],
      ['node.kubernetes.io/network-unavailable', 'NoSchedule'],
      ['node.cloudprovider.kubernetes.io/uninitialized', 'NoSchedule'],
      ['karpenter.sh/unregistered', 'NoExecute'],
    ] as const
  ).map(([key, effect]) => Object.freeze({ key, operator: 'Exists' as const, effect })),
);

/** An early puller's placement: `p` plus each {@link STARTUP_TOLERATIONS} it does not hold. */
export function withStartupTolerations(p: Placement): Placement {
  const held = new Set(p.tolerations.map(tolerationKey));
  return Object.freeze({
    nodeSelector: p.nodeSelector,
    tolerations: Object.freeze([...p.tolerations, ...STARTUP_TOLERATIONS.filter((t) => !held.has(tolerationKey(t)))]),
  });
}

/** A pool's placement; its pods always tolerate the gate taint they exist to lift. */
export function placementOf(nodeSelector: NodeSelector, tolerations: readonly Toleration[], gateTaintKey?: string): Placement {
  return Object.freeze({
    nodeSelector: Object.freeze(sortRecord(nodeSelector)),
    tolerations: Object.freeze(withGateToleration(sortTolerations(tolerations), gateTaintKey)),
  });
}

/** `tolerations`, plus an Exists toleration of the gate key unless one already covers every effect. */
export function withGateToleration(tolerations: readonly Toleration[], gateTaintKey: string | undefined): Toleration[] {
  const all = [...tolerations];
  if (gateTaintKey !== undefined && gateTaintKey !== '' && !toleratesEveryEffect(all, gateTaintKey)) {
    all.push({ key: gateTaintKey, operator: 'Exists' });
  }
  return all;
}

function toleratesEveryEffect(tolerations: readonly Toleration[], key: string): boolean {
  return tolerations.some((t) => t.effect === undefined && t.operator === 'Exists' && (t.key === undefined || t.key === key));
}

/** Canonical text of a toleration: equal texts mean equal tolerations. */
export function tolerationKey(t: Toleration): string {
  return [t.key ?? '', t.operator, t.value ?? '', t.effect ?? '', t.tolerationSeconds ?? ''].join('\u0000');
}

/** Tolerations de-duplicated and sorted, so order in the spec never changes identity or output. */
export function sortTolerations(tolerations: readonly Toleration[]): Toleration[] {
  const unique = new Map<string, Toleration>();
  for (const t of tolerations) unique.set(tolerationKey(t), t);
  return [...unique.keys()].sort(compareStrings).map((k) => unique.get(k) as Toleration);
}

/** One `matchExpressions` requirement of a node selector term. */
export interface NodeSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

/** core/v1 NodeAffinity with only the required part, as emitted. */
export interface RenderedNodeAffinity {
  readonly requiredDuringSchedulingIgnoredDuringExecution: {
    readonly nodeSelectorTerms: readonly [{ readonly matchExpressions: readonly NodeSelectorRequirement[] }];
  };
}

/** The required node affinity: ONE term of every selector label and `extra`, ANDed; undefined if empty. */
export function renderNodeAffinity(p: Placement, extra: readonly NodeSelectorRequirement[] = []): RenderedNodeAffinity | undefined {
  const matchExpressions: NodeSelectorRequirement[] = [
    ...Object.entries(p.nodeSelector).map(([key, value]) => ({ key, operator: 'In' as const, values: [value] })),
    ...extra,
  ];
  if (matchExpressions.length === 0) return undefined;
  return { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions }] } };
}

/** The pod's tolerations, verbatim: every field that was given, in canonical order. */
export function renderTolerations(p: Placement): Toleration[] {
  return p.tolerations.map((t) => ({
    ...(t.key === undefined ? {} : { key: t.key }),
    operator: t.operator,
    ...(t.value === undefined ? {} : { value: t.value }),
    ...(t.effect === undefined ? {} : { effect: t.effect }),
    ...(t.tolerationSeconds === undefined ? {} : { tolerationSeconds: t.tolerationSeconds }),
  }));
}

/** Whether a toleration tolerates a taint (core/v1 `Toleration.ToleratesTaint`). */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect !== undefined && t.effect !== taint.effect) return false;
  if (t.key !== undefined && t.key !== '' && t.key !== taint.key) return false;
  return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
}

/**
 * The DaemonSet controller's predicate: every selector label matches, and every NoSchedule or
 * NoExecute taint is tolerated by the pool or by {@link DAEMONSET_TOLERATIONS}.
 */
export function placementSelectsNode(p: Placement, node: PlacementNode): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(p.nodeSelector)) if (labels[k] !== v) return false;
  for (const taint of node.spec?.taints ?? []) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
    if (!p.tolerations.some((t) => tolerates(t, taint)) && !DAEMONSET_TOLERATIONS.some((t) => tolerates(t, taint))) return false;
  }
  return true;
}

/** Taints the node lifecycle controller sets and lifts as node conditions change. */
export const CONDITION_TAINT_KEYS: ReadonlySet<string> = new Set([
  'node.kubernetes.io/not-ready',
  'node.kubernetes.io/unreachable',
  'node.kubernetes.io/memory-pressure',
  'node.kubernetes.io/disk-pressure',
  'node.kubernetes.io/pid-pressure',
  'node.kubernetes.io/network-unavailable',
]);

/**
 * {@link placementSelectsNode} ignoring {@link CONDITION_TAINT_KEYS}: the gate must hold for a pool
 * whose pod a passing not-ready taint keeps away for now.
 */
export function placementSelectsHealthyNode(p: Placement, node: PlacementNode): boolean {
  const taints = (node.spec?.taints ?? []).filter((t) => !CONDITION_TAINT_KEYS.has(t.key));
  return placementSelectsNode(p, { metadata: node.metadata, spec: { taints } });
}

function sortRecord(record: NodeSelector): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => compareStrings(a, b)));
}

// ---- workloads on pools -----------------------------------------------------------------------

/** A workload's node selector requirement as written: any operator, so a refused one is kept. */
export interface WorkloadRequirement {
  readonly key: string;
  readonly operator: string;
  readonly values?: readonly string[];
}

/** One `nodeSelectorTerms[]` item of a workload's required node affinity. */
export interface WorkloadTerm {
  readonly matchExpressions?: readonly WorkloadRequirement[];
  readonly matchFields?: readonly WorkloadRequirement[];
}

/** A workload's toleration as written: an absent operator means `Equal`, as in core/v1. */
export interface WorkloadToleration {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
}

/** What decides where a workload's pods may run: the scheduler's NodeAffinity and TaintToleration filters. */
export interface WorkloadPlacement {
  /** Exact-match labels, ANDed. */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /** The required node affinity's terms (ORed); an empty list or term matches no node. */
  readonly requiredTerms?: readonly WorkloadTerm[];
  readonly tolerations?: readonly WorkloadToleration[];
  /** A pod bound to one node by name. */
  readonly nodeName?: string;
}

/** Where a pool stands for a workload: every node of the pool can run it, some can, or none can. */
export type PoolFit = { readonly fit: 'fits' } | { readonly fit: 'partial' | 'none'; readonly reason: string };

/** The pool's side of {@link workloadFitsPool}: its selector and the tolerations its spec gave. */
export interface PoolPlacement {
  readonly nodeSelector: NodeSelector;
  readonly tolerations: readonly Toleration[];
  /** The pool's gate taint, which its nodes carry only while they warm: never counted. */
  readonly gateTaintKey?: string | undefined;
}

/**
 * Whether every node of a pool can run a workload, as the scheduler decides: the pool's nodes carry
 * its selector labels and the taints its keyed NoSchedule/NoExecute tolerations name, never the
 * gate taint. See docs/architecture.md (Placement) for how "partial" is decided.
 */
export function workloadFitsPool(pool: PoolPlacement, workload: WorkloadPlacement): PoolFit {
  const labels = labelFit(pool.nodeSelector, workload);
  const taints = taintFit(pool, workload);
  if (labels.fit === 'none') return labels;
  if (taints.fit === 'none') return taints;
  if (labels.fit === 'partial') return labels;
  return taints;
}

/** The pseudo-key of a node's name, which `matchFields` and `nodeName` select: never a label key. */
const NODE_NAME = '\u0000metadata.name';

/** One test of one key's value: undefined is a node without the label. */
interface Atom {
  readonly key: string;
  readonly holds: (value: string | undefined) => boolean;
  readonly requirement: WorkloadRequirement;
}

/** Go's `strconv.ParseInt(s, 10, 64)`: a sign, decimal digits, within int64; undefined otherwise. */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n;
}
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** `labels.Requirement.Matches`; undefined when `labels.NewRequirement` refuses it. */
function labelAtom(r: WorkloadRequirement): Atom | undefined {
  const values = r.values ?? [];
  const atom = (holds: Atom['holds']): Atom => ({ key: r.key, holds, requirement: r });
  switch (r.operator) {
    case 'In':
      return values.length === 0 ? undefined : atom((v) => v !== undefined && values.includes(v));
    case 'NotIn':
      return values.length === 0 ? undefined : atom((v) => v === undefined || !values.includes(v));
    case 'Exists':
      return values.length !== 0 ? undefined : atom((v) => v !== undefined);
    case 'DoesNotExist':
      return values.length !== 0 ? undefined : atom((v) => v === undefined);
    case 'Gt':
    case 'Lt': {
      const bound = values.length === 1 ? parseInt64(values[0] as string) : undefined;
      if (bound === undefined) return undefined;
      return atom((v) => {
        const n = v === undefined ? undefined : parseInt64(v);
        return n !== undefined && (r.operator === 'Gt' ? n > bound : n < bound);
      });
    }
    default:
      return undefined;
  }
}

/** A `matchFields` requirement: only `metadata.name`, In or NotIn with exactly one value. */
function fieldAtom(r: WorkloadRequirement): Atom | undefined {
  const values = r.values ?? [];
  if (r.key !== 'metadata.name' || values.length !== 1 || (r.operator !== 'In' && r.operator !== 'NotIn')) return undefined;
  const name = values[0];
  return { key: NODE_NAME, holds: (v) => (v === name) === (r.operator === 'In'), requirement: { ...r, key: NODE_NAME } };
}

/** A term's atoms, or undefined when it matches no node (empty, or a requirement the scheduler refuses). */
function termAtoms(term: WorkloadTerm): Atom[] | undefined {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return undefined;
  const atoms = [...exprs.map(labelAtom), ...fields.map(fieldAtom)];
  return atoms.every((a) => a !== undefined) ? atoms : undefined;
}

/**
 * One value of each kind a free key can take, as the atoms on it tell them apart: no label, each
 * named value, an integer in each cell the Gt/Lt bounds cut, and an unnamed non-integer.
 */
function representatives(key: string, atoms: readonly Atom[]): (string | undefined)[] {
  const named = new Set<string>();
  const bounds = new Set<bigint>();
  for (const a of atoms) {
    if (a.key !== key) continue;
    const values = a.requirement.values ?? [];
    if (a.requirement.operator === 'Gt' || a.requirement.operator === 'Lt') bounds.add(parseInt64(values[0] as string) as bigint);
    else for (const v of values) named.add(v);
  }
  const sorted = [...bounds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const cells: bigint[] = sorted.length === 0 ? [0n] : [];
  sorted.forEach((b, i) => {
    cells.push(b - 1n, b);
    const next = sorted[i + 1];
    if (next === undefined || next - b >= 2n) cells.push(b + 1n);
  });
  const fresh = (spell: (zeros: number) => string): string => {
    for (let z = 0; ; z++) if (!named.has(spell(z))) return spell(z);
  };
  const out: (string | undefined)[] = key === NODE_NAME ? [] : [undefined];
  for (const v of named) out.push(v);
  for (const n of cells) {
    if (n < INT64_MIN || n > INT64_MAX) continue;
    const digits = (n < 0n ? -n : n).toString();
    out.push(fresh((z) => `${n < 0n ? '-' : ''}${'0'.repeat(z)}${digits}`));
  }
  out.push(fresh((z) => `x${'_'.repeat(z)}`));
  return out;
}

/** Steps of the search for a node no term matches, at most: past it the answer is "partial". */
const MAX_COVER_STEPS = 20_000;

function labelFit(selector: NodeSelector, w: WorkloadPlacement): PoolFit {
  const pinned: Atom[] = Object.entries(w.nodeSelector ?? {}).map(([key, value]) => ({
    key,
    holds: (v) => v === value,
    requirement: { key, operator: 'In', values: [value] },
  }));
  if (w.nodeName !== undefined) pinned.push(fieldAtom({ key: 'metadata.name', operator: 'In', values: [w.nodeName] }) as Atom);
  const terms = w.requiredTerms === undefined ? [[]] : w.requiredTerms.map(termAtoms).filter((t): t is Atom[] => t !== undefined);
  const all = [...pinned, ...terms.flat()];
  const reps = new Map<string, (string | undefined)[]>();
  const repsOf = (key: string) => {
    let r = reps.get(key);
    if (r === undefined) reps.set(key, (r = representatives(key, all)));
    return r;
  };
  // A key the pool's selector fixes has one value on every node of the pool.
  const fixed = (a: Atom) => Object.hasOwn(selector, a.key);
  const failed = pinned.find((a) => fixed(a) && !a.holds(selector[a.key]));
  if (failed !== undefined)
    return { fit: 'none', reason: `${explain(failed, w)}, and the pool's nodes have ${label(failed.key, selector)}` };
  const free = (atoms: readonly Atom[]) => atoms.filter((a) => !fixed(a));
  const live = terms.filter((t) => t.every((a) => !fixed(a) || a.holds(selector[a.key]))).map(free);
  const open = free(pinned);
  const satisfiable = (atoms: readonly Atom[]) =>
    [...new Set(atoms.map((a) => a.key))].every((key) => repsOf(key).some((v) => atoms.every((a) => a.key !== key || a.holds(v))));
  if (!live.some((t) => satisfiable([...open, ...t]))) {
    const reason =
      terms.length === 0
        ? 'its required node affinity has no term that matches any node'
        : "no term of its required node affinity matches the pool's nodes";
    return { fit: 'none', reason };
  }
  const wanted = open.find((a) => !repsOf(a.key).every((v) => a.holds(v)));
  if (wanted !== undefined) return { fit: 'partial', reason: `${explain(wanted, w)}, which the pool's nodeSelector does not fix` };
  const steps = { left: MAX_COVER_STEPS };
  const cover = covers(live, repsOf, steps);
  if (cover) return { fit: 'fits' };
  const keys = [...new Set(live.flat().map((a) => a.key))].map((k) => (k === NODE_NAME ? 'the node name' : k)).sort(compareStrings);
  const why = steps.left < 0 ? ' (too many terms to decide)' : '';
  return {
    fit: 'partial',
    reason: `its required node affinity asks for ${keys.join(', ')}, which the pool's nodeSelector does not fix${why}`,
  };
}

/** Whether every node matches one of `terms`, splitting on one key's values at a time. */
function covers(terms: readonly (readonly Atom[])[], repsOf: (key: string) => (string | undefined)[], steps: { left: number }): boolean {
  if (terms.some((t) => t.length === 0)) return true;
  if (terms.length === 0 || --steps.left < 0) return false;
  const key = (terms[0] as readonly Atom[])[0]?.key as string;
  return repsOf(key).every((v) =>
    covers(
      terms.filter((t) => t.every((a) => a.key !== key || a.holds(v))).map((t) => t.filter((a) => a.key !== key)),
      repsOf,
      steps,
    ),
  );
}

function explain(a: Atom, w: WorkloadPlacement): string {
  const r = a.requirement;
  if (a.key === NODE_NAME) return w.nodeName !== undefined ? `it is bound to node ${w.nodeName}` : `it selects nodes by name`;
  if (Object.hasOwn(w.nodeSelector ?? {}, r.key) && r.operator === 'In') return `it selects ${r.key}=${r.values?.[0] ?? ''}`;
  return `it requires ${r.key} ${r.operator}${r.values === undefined || r.values.length === 0 ? '' : ` ${r.values.join(',')}`}`;
}

function label(key: string, selector: NodeSelector): string {
  return `${key}=${selector[key] ?? ''}`;
}

/** Whether a toleration's key and effect take in a taint's (the value aside). */
function tolerationMatchesKey(t: WorkloadToleration, key: string, effect: string): boolean {
  return (t.key === undefined || t.key === '' || t.key === key) && (t.effect === undefined || t.effect === '' || t.effect === effect);
}

/** core/v1 `Toleration.ToleratesTaint` for a toleration as written (comparison operators off, as by default). */
function workloadTolerates(t: WorkloadToleration, taint: Taint): boolean {
  const operator = t.operator === undefined || t.operator === '' ? 'Equal' : t.operator;
  if (operator !== 'Equal' && operator !== 'Exists') return false;
  if (!tolerationMatchesKey(t, taint.key, taint.effect)) return false;
  return tolerates(
    { ...(t.key === undefined ? {} : { key: t.key }), operator, ...(t.value === undefined ? {} : { value: t.value }) },
    taint,
  );
}

/** The taints a pool's nodes are known to carry, per key and effect; undefined values: any. */
export function knownTaints(pool: PoolPlacement): { key: string; effect: TaintEffect; values?: string[] }[] {
  const groups = new Map<string, { key: string; effect: TaintEffect; values?: string[] }>();
  for (const t of pool.tolerations) {
    if (t.key === undefined || t.key === '' || t.key === pool.gateTaintKey) continue;
    if (t.effect !== 'NoSchedule' && t.effect !== 'NoExecute') continue;
    const id = `${t.key}\u0000${t.effect}`;
    const group = groups.get(id) ?? { key: t.key, effect: t.effect, values: [] };
    if (t.operator === 'Exists') delete group.values;
    else if (group.values !== undefined && !group.values.includes(t.value ?? '')) group.values.push(t.value ?? '');
    groups.set(id, group);
  }
  return [...groups.values()].sort((a, b) => compareStrings(`${a.key}:${a.effect}`, `${b.key}:${b.effect}`));
}

/** Kubelet admission of a `nodeName` pod checks only NoExecute taints (`generalFilter`). */
function taintFit(pool: PoolPlacement, workload: WorkloadPlacement): PoolFit {
  const tolerations = workload.tolerations ?? [];
  const checked = knownTaints(pool).filter((t) => workload.nodeName === undefined || t.effect === 'NoExecute');
  let partial: string | undefined;
  for (const { key, effect, values } of checked) {
    const name = `${key}:${effect}`;
    if (values === undefined) {
      // Any value: only an Exists toleration covers them all; an Equal one covers the value it names.
      const matching = tolerations.filter((t) => tolerationMatchesKey(t, key, effect));
      if (matching.some((t) => t.operator === 'Exists')) continue;
      const equal = matching.find((t) => t.operator === undefined || t.operator === '' || t.operator === 'Equal');
      if (equal === undefined) return { fit: 'none', reason: `it does not tolerate the taint ${name} that the pool's nodes carry` };
      partial ??= `it tolerates the taint ${name} only with the value "${equal.value ?? ''}"`;
      continue;
    }
    const tolerated = values.filter((value) => tolerations.some((t) => workloadTolerates(t, { key, effect, value })));
    if (tolerated.length === 0) return { fit: 'none', reason: `it does not tolerate the taint ${name} that the pool's nodes carry` };
    if (tolerated.length < values.length)
      partial ??= `it tolerates the taint ${name} only with the value${tolerated.length > 1 ? 's' : ''} ${tolerated.map((v) => `"${v}"`).join(', ')}`;
  }
  return partial === undefined ? { fit: 'fits' } : { fit: 'partial', reason: partial };
}
