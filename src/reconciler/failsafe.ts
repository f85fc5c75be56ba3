/**
 * The fail-safe's pure core: observed nodes, the holder pods on them and the time in; the gate
 * taints to remove, each with its patch and its Event, out. The fail-safe runs once per cluster, on
 * a node that already holds the reconciler image, and covers the one case the sidecars cannot: a
 * node where no sidecar of prewarm runs at all, so no process on the node enforces the gate's
 * absolute bound (docs/architecture.md, "The fail-safe").
 *
 * "Past the bound" is measured from the node's creationTimestamp, as the sidecars measure their
 * absolute bound: it is set by the apiserver, immutable, and there from the first moment, while a
 * node that never turns Ready (its CNI never starts) has no Ready time at all, and one that flaps
 * moves it. The grace covers boot to Ready, which the pools' deadlines (counted from Ready) do not.
 */
import { absoluteBoundAt } from '../contract/gate-key.js';
import { failsafeGateEvent, type EventIntent } from '../contract/events.js';
import { FAILSAFE_MAX_RELEASES } from '../contract/failsafe.js';
import { NodeState, SIDECAR_CONTAINER } from '../contract/names.js';
import { statusOf, timeOf } from '../contract/pod-status.js';
import { deadlineOf, poolsGating, type PoolsFile } from '../contract/pools-file.js';
import type { KNode, KPod } from './kube-types.js';
import type { JsonPatchOp } from './ports.js';
import { taintRemovalPatch } from './patches.js';

/** A gate taint on a node that is past the fail-safe's bound. */
export interface OverdueGate {
  readonly node: KNode;
  readonly key: string;
  /** The node's creationTimestamp (ms). */
  readonly createdAt: number;
  /** When the fail-safe's bound passed (ms). */
  readonly boundAt: number;
  /** Pools gating the node with this key that are neither warm nor partial, sorted. */
  readonly waitingFor: readonly string[];
}

/** One taint removal the fail-safe makes. */
export interface Release {
  readonly node: string;
  readonly key: string;
  /** The test-guarded JSON patch (the sidecars' own, patches.ts). */
  readonly ops: readonly JsonPatchOp[];
  readonly event: EventIntent;
}

/** Every gate key some pool of the bundle gates on: the only taints the fail-safe ever looks at. */
export function gateKeysOf(pools: PoolsFile): string[] {
  return [...new Set(pools.pools.map((p) => p.gateTaintKey).filter((k) => k !== ''))].sort();
}

const isReady = (v: string | undefined): boolean => v === NodeState.Warm || v === NodeState.Partial;

/**
 * The gate taints past their bound, the longest overdue first, at most
 * {@link FAILSAFE_MAX_RELEASES} and at most one per node (a second key of the same node waits for
 * the next look, on the node as the first removal left it). A pool that no longer selects the node
 * holds no gate; a taint that no pool of the bundle lifts is bound by the default deadline.
 */
export function overdueGates(nodes: readonly KNode[], pools: PoolsFile, now: number, graceSeconds: number): OverdueGate[] {
  const keys = gateKeysOf(pools);
  const out: OverdueGate[] = [];
  for (const node of nodes) {
    const createdAt = timeOf(node.metadata.creationTimestamp);
    if (createdAt === undefined) continue;
    const key = keys.find((k) => (node.spec?.taints ?? []).some((t) => t.key === k));
    if (key === undefined) continue;
    const gating = poolsGating(pools, key, node);
    const boundAt = absoluteBoundAt(createdAt, gating.map(deadlineOf), graceSeconds);
    if (now < boundAt) continue;
    const labels = node.metadata.labels ?? {};
    const waitingFor = gating
      .filter((p) => !isReady(labels[p.nodeLabelKey]))
      .map((p) => p.id)
      .sort();
    out.push({ node, key, createdAt, boundAt, waitingFor });
  }
  return out.sort((a, b) => a.boundAt - b.boundAt).slice(0, FAILSAFE_MAX_RELEASES);
}

/**
 * Whether a sidecar of prewarm runs among a node's holder pods: one not being deleted whose sidecar
 * container is running. A running sidecar enforces the absolute bound itself, earlier than the
 * fail-safe's; one waiting (its image unpullable, in a crash loop) or a pod being deleted does not.
 */
export function runsSidecar(pods: readonly KPod[]): boolean {
  return pods.some((p) => !p.metadata.deletionTimestamp && Boolean(statusOf(p, SIDECAR_CONTAINER)?.state?.running));
}

/**
 * The removals to make: each overdue gate whose node has no running sidecar. `holders` maps a node
 * name to the holder pods on it; a node missing there (its pods could not be listed) is left for the
 * next look, since a sidecar may be running there.
 */
export function decideReleases(overdue: readonly OverdueGate[], holders: ReadonlyMap<string, readonly KPod[]>, now: number): Release[] {
  return overdue.flatMap((o) => {
    const name = o.node.metadata.name ?? '';
    const pods = holders.get(name);
    if (pods === undefined || runsSidecar(pods)) return [];
    const ops = taintRemovalPatch(o.node, o.key);
    if (ops === undefined) return [];
    const secs = (ms: number): number => Math.round(ms / 1000);
    const event = failsafeGateEvent(o.key, secs(now - o.createdAt), secs(o.boundAt - o.createdAt), o.waitingFor);
    return [{ node: name, key: o.key, ops, event }];
  });
}
