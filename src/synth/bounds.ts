/**
 * The bounds the trusted invocation sets on what an untrusted spec may ask of the cluster: pull
 * pods' priority, their memory on one node, and the registry request rate of tag refresh.
 */
import type { Diagnostic } from '../imagecache/errors.js';
import type { Bundle, Pool } from '../imagecache/model.js';
import { formatDuration } from '../imagecache/duration.js';
import { checkDns1123Subdomain } from '../imagecache/k8s-validation.js';
import { error, poolLocation, poolName, where } from './checks/diagnostics.js';

const MIB = 1024 * 1024;

/** The bounds a synth run holds specs to, each as the invocation set it or by default. */
export interface InvocationBounds {
  /** PriorityClasses a spec may name; never a `system-` one. */
  readonly allowedPriorityClasses: readonly string[];
  /** The most memory the pull pods of every pool selecting one node may request there together. */
  readonly maxNodeMemoryBytes: number;
  /** The shortest moved-tag refresh interval a spec may set, in seconds (0, off, is always allowed). */
  readonly minRefreshSeconds: number;
}

/** Defaults for a team that has not thought about this yet; docs/operations.md says why each. */
export const BOUND_DEFAULTS: InvocationBounds = {
  allowedPriorityClasses: [],
  maxNodeMemoryBytes: 1024 * MIB,
  minRefreshSeconds: 300,
};

/** The limits of `--max-node-memory`: a bound under one image's holder and puller, or past a large node, is a typo. */
export const NODE_MEMORY_RANGE = { min: 64 * MIB, max: 1024 * 1024 * MIB } as const;

/** The prefix Kubernetes reserves for its own PriorityClasses. */
export const SYSTEM_PRIORITY_PREFIX = 'system-';

/** Why `name` cannot be allowed as a PriorityClass for specs, or undefined when it can. */
export function priorityClassAllowanceError(name: string): string | undefined {
  const invalid = checkDns1123Subdomain(name);
  if (invalid !== undefined) return `is not a PriorityClass name: it ${invalid}`;
  if (name.startsWith(SYSTEM_PRIORITY_PREFIX))
    return `is a system PriorityClass: pull pods at that priority preempt workloads on every node their pools select; never allowed`;
  return undefined;
}

/** Pools naming a class not allowed; a system class never: the scheduler would evict workloads for them. */
export function checkPriorityClasses(bundle: Bundle, allowed: readonly string[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const pool of bundle.pools) {
    const name = pool.settings.priorityClassName;
    if (name === undefined) continue;
    const at = pool.settingLocations.priorityClassName ?? poolLocation(pool);
    const prefix = `${describe(pool)}: priorityClassName "${name}"`;
    if (name.startsWith(SYSTEM_PRIORITY_PREFIX)) {
      out.push(
        error(
          at,
          `${prefix} is a system PriorityClass, which a spec may never choose: at that priority the scheduler preempts workloads ` +
            "to fit the pool's pull pods on every node it selects; remove priorityClassName",
        ),
      );
    } else if (!allowed.includes(name)) {
      const listed = allowed.length === 0 ? 'allows none' : `allows ${allowed.map((a) => `"${a}"`).join(', ')}`;
      out.push(
        error(
          at,
          `${prefix} is not allowed by this invocation (--allow-priority-class ${listed}): a PriorityClass lets the pull pods ` +
            'preempt workloads, so only whoever runs synth may grant one; ask them to allow it, or remove priorityClassName',
        ),
      );
    }
  }
  return out;
}

/**
 * Pools refreshing more often than `floorSeconds`: every node asks per tag per interval, usually
 * from one egress address that registries rate-limit.
 */
export function checkRefreshFloor(bundle: Bundle, floorSeconds: number): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const pool of bundle.pools) {
    const seconds = pool.settings.refreshSeconds;
    if (seconds === 0 || seconds >= floorSeconds) continue;
    const at = pool.settingLocations.refreshSeconds ?? poolLocation(pool);
    out.push(
      error(
        at,
        `${describe(pool)}: refresh interval ${formatDuration(seconds)} is under ${formatDuration(floorSeconds)}, the shortest this invocation ` +
          `allows (--min-refresh-interval): every node of the pool asks the registry about each of its ${pool.images.length} ` +
          `image${pool.images.length === 1 ? '' : 's'} once per interval; set an interval of ${formatDuration(floorSeconds)} or more`,
      ),
    );
  }
  return out;
}

function describe(pool: Pool): string {
  return `pool ${poolName(pool)} (${where(poolLocation(pool))})`;
}
