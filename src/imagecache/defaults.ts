/**
 * The pool settings a spec leaves out, resolved once: the rollout's maxUnavailable, the gate, the
 * refresh interval, the lanes and early pulling.
 */
import { DEFAULT_GATE_TAINT_KEY, DEFAULTS } from '../contract/names.js';
import type { PoolSettings } from './model.js';
import type { RawSpec } from './shapes.js';

const DEFAULT_MAX_UNAVAILABLE = '10%';
/**
 * Lanes per pool: why the default is 4 is measured in docs/benchmarks.md (Lanes); the cap keeps a
 * joining node's pod slots and IPs, one per puller during warm-up, bounded.
 */
export const LANES = { default: 4, min: 1, max: 16 } as const;

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
    // on a kubelet that pulls serially an early pull can delay the node's Ready (README).
    earlyPull: spec.earlyPull ?? false,
  };
}

/** The lane count a pool gets when no ImageCache sets `spec.lanes`, and the range it may take. */
export const LANES_SETTING = LANES;
