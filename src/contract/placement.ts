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
