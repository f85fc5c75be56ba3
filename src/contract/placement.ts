/**
 * Placement: where a pool's pull pods run. It is computed once ({@link placementOf}) and both sides
 * of the synth↔sidecar contract are rendered from it: the DaemonSet's node affinity and
 * tolerations ({@link renderNodeAffinity}, {@link renderTolerations}) and the pool's entry in
 * pools.json, which the sidecar evaluates with {@link placementSelectsNode}. So the DaemonSet and
 * the sidecar's view of "which pools select this node" cannot disagree.
 *
 * Kubernetes semantics are kept exactly:
 * - nodeSelector labels are ANDed: they go into ONE node selector term (terms are ORed);
 * - tolerations are kept whole: key, operator, value, effect and tolerationSeconds;
 * - the predicate is the DaemonSet controller's (`pkg/controller/daemon`, `predicates` and
 *   `AddOrUpdateDaemonPodTolerations` in Kubernetes v1.36), which decides where daemon pods run.
 *
 * Pure, with no dependency outside the contract: the spec model, the constructs, the sidecar and the CLI import it.
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
  /**
   * The spec's tolerations, de-duplicated and sorted by {@link tolerationKey}, then the gate
   * toleration when one is needed (last, as earlier releases emitted it: reordering a pod
   * template's tolerations would roll every pull pod and re-pull every image).
   */
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
 * The tolerations the DaemonSet controller adds to every daemon pod that is not on the host
 * network (`AddOrUpdateDaemonPodTolerations`). Key AND effect matter: a
 * `node.kubernetes.io/disk-pressure:NoExecute` taint is not among them, and
 * `node.kubernetes.io/network-unavailable` is tolerated only by hostNetwork pods, which holders are
 * not (early pullers are, and tolerate it by {@link STARTUP_TOLERATIONS} as well).
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
 * The taints a node carries between registration and Ready, which an early puller tolerates so
 * that it runs in that window (on the host network, its sandbox needs no CNI):
 * - `node.kubernetes.io/not-ready:NoSchedule`, set by the NodeTaint admission plugin at creation
 *   and lifted by the node lifecycle controller at Ready (the DaemonSet controller adds only its
 *   NoExecute twin to daemon pods);
 * - `node.kubernetes.io/network-unavailable:NoSchedule`, while the NetworkUnavailable condition is
 *   true (cloud routes not yet set up);
 * - `node.cloudprovider.kubernetes.io/uninitialized:NoSchedule`, until the cloud controller
 *   manager initialises the node;
 * - `karpenter.sh/unregistered:NoExecute`, which Karpenter (v1) has the kubelet register with and
 *   lifts once it has synced the NodeClaim's labels and taints onto the node. NoExecute, so without
 *   a toleration a pod on the node would be evicted, not just left unscheduled.
 * The gate toleration comes from the pool's own placement. Kept whole: key, operator and effect
 * exactly, and no tolerationSeconds, so no eviction ever follows.
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

/**
 * The placement of a pool's early pullers: `p`'s selector, and its tolerations followed by each of
 * {@link STARTUP_TOLERATIONS} that `p` does not already hold (as the same toleration).
 */
export function withStartupTolerations(p: Placement): Placement {
  const held = new Set(p.tolerations.map(tolerationKey));
  return Object.freeze({
    nodeSelector: p.nodeSelector,
    tolerations: Object.freeze([...p.tolerations, ...STARTUP_TOLERATIONS.filter((t) => !held.has(tolerationKey(t)))]),
  });
}

/**
 * A pool's placement from its selector, its tolerations and its gate taint key (if it gates):
 * the pull pods must tolerate the gating taint they exist to lift, whatever its effect, unless a
 * toleration given already tolerates that key with every effect.
 */
export function placementOf(nodeSelector: NodeSelector, tolerations: readonly Toleration[], gateTaintKey?: string): Placement {
  return Object.freeze({
    nodeSelector: Object.freeze(sortRecord(nodeSelector)),
    tolerations: Object.freeze(withGateToleration(sortTolerations(tolerations), gateTaintKey)),
  });
}

/**
 * `tolerations` in their order, plus `{key: gateTaintKey, operator: Exists}` at the end unless one
 * of them already tolerates that key with every effect.
 */
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

/**
 * The pod's required node affinity: ONE term holding every selector label (`In [value]`, sorted by
 * key) and any `extra` requirements, all ANDed. Undefined when there is nothing to require.
 */
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
 * Whether the DaemonSet controller runs a pool's pod on the node: every selector label matches, and
 * every NoSchedule or NoExecute taint is tolerated by the pool's tolerations or by those the
 * controller adds to every daemon pod. PreferNoSchedule never keeps a daemon pod away.
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

/**
 * Taints the node lifecycle controller sets and lifts as node conditions change
 * (`TaintNodesByCondition`, and taint-based eviction for not-ready/unreachable). A new node carries
 * `not-ready:NoSchedule` until it is Ready, and a node that flaps gets it again.
 */
export const CONDITION_TAINT_KEYS: ReadonlySet<string> = new Set([
  'node.kubernetes.io/not-ready',
  'node.kubernetes.io/unreachable',
  'node.kubernetes.io/memory-pressure',
  'node.kubernetes.io/disk-pressure',
  'node.kubernetes.io/pid-pressure',
  'node.kubernetes.io/network-unavailable',
]);

/**
 * Whether a pool's pod runs on the node once its conditions are healthy: {@link placementSelectsNode}
 * on the node without its {@link CONDITION_TAINT_KEYS} taints. The gate asks this, not the
 * placement of this instant: a pool that a passing not-ready taint keeps away now gets its pod as
 * soon as the taint goes, and must still hold the gate until then.
 */
export function placementSelectsHealthyNode(p: Placement, node: PlacementNode): boolean {
  const taints = (node.spec?.taints ?? []).filter((t) => !CONDITION_TAINT_KEYS.has(t.key));
  return placementSelectsNode(p, { metadata: node.metadata, spec: { taints } });
}

function sortRecord(record: NodeSelector): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => compareStrings(a, b)));
}

// ---- workloads on pools -----------------------------------------------------------------------

/**
 * One requirement of a workload's node selector term, as a manifest writes it: any operator, so
 * that one the scheduler refuses is kept and makes its term match nothing, as it does there.
 */
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
  /**
   * The terms of the required node affinity (ORed), or undefined when there is none. An empty
   * list, like an empty term, matches no node.
   */
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
 * Whether every node of a pool can run a workload, as the scheduler decides it. A pool's nodes are
 * every node that carries the pool's selector labels (and any others), tainted with what the pool
 * is known to carry: one taint per key and effect named by the pool's own keyed tolerations with
 * effect NoSchedule or NoExecute (of the values those tolerations accept; any value for `Exists`),
 * never the gate taint. "fits" when every such node passes the workload's nodeSelector, required
 * node affinity and tolerations; "none" when no node does; "partial" otherwise. A pod bound by
 * `nodeName` is admitted by the kubelet instead, which ignores NoSchedule taints.
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

/**
 * A label requirement as `labels.Requirement.Matches` evaluates it, or undefined when
 * `labels.NewRequirement` refuses it (then its whole term matches nothing).
 */
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
 * Values standing for every value a free key can take: two values with the same answer to every
 * atom on the key are the same to the scheduler, so one of each kind is enough. The kinds are: no
 * label; each value an atom names; an integer in each cell the Gt/Lt bounds cut, spelt as no atom
 * names it; a value that is no integer and that no atom names.
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

/**
 * Whether every node matches one of `terms` (each a list of atoms on free keys, ANDed): split on
 * the values of one key at a time until a term holds outright or none is left.
 */
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

/**
 * The taints a pool's nodes are known to carry, one per key and effect: the values they may have
 * (undefined: any value, from an `Exists` toleration).
 */
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

/**
 * A pod bound by `nodeName` never meets the scheduler: the kubelet admits it, and of the taints it
 * checks only NoExecute (`generalFilter` in `pkg/kubelet/lifecycle`).
 */
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
