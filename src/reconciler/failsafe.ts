/**
 * The fail-safe's pure core: nodes, their holder pods and the time in; gate taints to remove out.
 * It covers nodes where no sidecar runs, counting from creationTimestamp (docs/architecture.md,
 * The fail-safe).
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
 * {@link FAILSAFE_MAX_RELEASES} and one per node; a taint no pool lifts has the default deadline.
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

/** Whether a holder pod on the node, not being deleted, has its sidecar container running. */
export function runsSidecar(pods: readonly KPod[]): boolean {
  return pods.some((p) => !p.metadata.deletionTimestamp && Boolean(statusOf(p, SIDECAR_CONTAINER)?.state?.running));
}

/** The removals to make: each overdue gate whose node has no running sidecar; unlisted nodes wait. */
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
