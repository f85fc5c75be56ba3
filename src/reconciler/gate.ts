/** Phase 2 of a reconcile, the gate: whether to lift the gating taint, its Event and the next look. Pure. */
import { NodeState } from '../contract/names.js';
import { absoluteBoundAt } from '../contract/gate-key.js';
import { timeOf } from '../contract/pod-status.js';
import { deadlineOf, poolsGating, type PoolsFile } from '../contract/pools-file.js';
import type { ReconcilerConfig } from '../contract/sidecar-env.js';
import type { KNode } from './kube-types.js';
import type { PoolDecision, PoolState } from './pool.js';
import { gateEvent, type EventIntent } from '../contract/events.js';
import { GateOutcome } from './metrics.js';

/** Phase 2 output: what to do with the gating taint. */
export interface GateDecision {
  /** Remove every taint with this key. */
  readonly removeTaintKey?: string;
  readonly outcome?: GateOutcome;
  /** Pools selecting the node, with this gate key, that are neither warm nor partial. */
  readonly waitingFor: readonly string[];
  /** Absolute bound (ms) while the taint is still there and we wait. */
  readonly forceAt?: number;
}

/**
 * Phase 2: the gating taint, decided on the node returned by our own label write, so the last
 * writer sees every pool's label; a second remover fails the patch's `test`. The taint also goes at
 * our deadline and at the absolute bound (docs/architecture.md, The gate).
 */
export function decideGate(node: KNode, pools: PoolsFile, config: ReconcilerConfig, ownState: PoolState, now: number): GateDecision {
  const key = config.gateTaintKey;
  if (key === '' || !(node.spec?.taints ?? []).some((t) => t.key === key)) return { waitingFor: [] };
  const gating = poolsGating(pools, key, node).filter((p) => p.id !== config.poolId);
  const labels = node.metadata.labels ?? {};
  const ready = (v: string | undefined): boolean => v === NodeState.Warm || v === NodeState.Partial;
  const waitingFor = [
    ...(ready(ownState) ? [] : [config.poolId]),
    ...gating.filter((p) => !ready(labels[p.nodeLabelKey])).map((p) => p.id),
  ].sort();
  if (waitingFor.length === 0) return { removeTaintKey: key, outcome: GateOutcome.Ready, waitingFor };
  const created = timeOf(node.metadata.creationTimestamp) ?? now;
  const forceAt = absoluteBoundAt(created, [config.deadlineSeconds, ...gating.map(deadlineOf)]);
  if (now >= forceAt) return { removeTaintKey: key, outcome: GateOutcome.Forced, waitingFor };
  return { waitingFor, forceAt };
}

/** Phase 2's Event merged with phase 1's, so one reconcile posts at most one Event. */
export function mergeEvents(pool: readonly EventIntent[], gate: GateDecision): EventIntent[] {
  if (!gate.removeTaintKey) return [...pool];
  return [gateEvent(pool[0], gate.outcome === GateOutcome.Forced ? 'forced' : 'ready', gate.removeTaintKey, gate.waitingFor)];
}

/** When to look again without a pod event: our deadline while warming, the absolute bound while the taint waits. */
export function nextCheckAt(pool: PoolDecision, gate: GateDecision): number | undefined {
  const t = [pool.state === 'warming' ? pool.deadlineAt : undefined, gate.removeTaintKey ? undefined : gate.forceAt].filter(
    (x): x is number => x !== undefined,
  );
  return t.length ? Math.min(...t) : undefined;
}
