/**
 * The pool settings a spec leaves out, resolved once: the rollout's maxUnavailable, the gate, the
 * refresh interval, the lanes and early pulling.
 */
import { DEFAULT_GATE_TAINT_KEY, DEFAULTS, LANES } from '../contract/names.js';
import type { PoolSettings } from './model.js';
import { DEFAULT_MAX_UNAVAILABLE, type RawSpec } from './shapes.js';

/** A pool's settings from a read spec, each missing field given its default. */
export function toSettings(spec: Partial<RawSpec>): PoolSettings {
  const gate = spec.gate?.value;
  const gateEnabled = gate?.enabled ?? true;
  return {
    ...(spec.priorityClassName === undefined ? {} : { priorityClassName: spec.priorityClassName }),
    maxUnavailable: spec.rollout?.value.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE,
    ...(gateEnabled
      ? { gate: { taintKey: gate?.taintKey ?? DEFAULT_GATE_TAINT_KEY, deadlineSeconds: gate?.deadline ?? DEFAULTS.deadlineSeconds } }
      : {}),
    refreshSeconds: spec.refresh?.value.interval ?? DEFAULTS.refreshSeconds,
    lanes: spec.lanes ?? LANES.default,
    // Off unless asked for: host networking relaxes the namespace's Pod Security enforce level, and
    // on a kubelet that pulls serially an early pull can delay the node's Ready (docs/architecture.md).
    earlyPull: spec.earlyPull ?? false,
  };
}
