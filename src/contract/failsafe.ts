/** The fail-safe's side of the contract: its argument, its environment (render/parse pair) and its bounds. */
import { ABSOLUTE_GRACE_SECONDS } from './gate-key.js';
import { ENV, LIMITS } from './names.js';
import { ConfigError, type Env, type SidecarEnvVar } from './sidecar-env.js';

/** The argument that starts the reconciler image as the fail-safe instead of the sidecar. */
export const FAILSAFE_MODE = 'failsafe';

/** The fail-safe's container, in its Deployment's pod. */
export const FAILSAFE_CONTAINER = 'prewarm-failsafe';

/** Environment variables of the fail-safe, besides the downward API fields it shares with the sidecar. */
export const FAILSAFE_ENV = {
  /** Seconds past the longest deadline of the pools gating a node, counted from its creation. */
  graceSeconds: 'PREWARM_FAILSAFE_GRACE_SECONDS',
} as const;

/** The sidecars' absolute grace plus a margin, so a running sidecar always removes the taint first. */
export const FAILSAFE_DEFAULT_GRACE_SECONDS = ABSOLUTE_GRACE_SECONDS + 60;

/** Seconds between two looks of the fail-safe; each look is jittered by up to a tenth of it. */
export const FAILSAFE_PERIOD_SECONDS = 30;

/** Nodes asked for per page of the node list: a page of nodes with long image lists stays well under the client's body cap. */
export const FAILSAFE_NODE_PAGE = 50;

/** Pages of nodes read per look at most (so nodes beyond that many wait for a later look, never forever: the list is sorted by name). */
export const FAILSAFE_MAX_PAGES = 400;

/** Nodes the fail-safe asks about (pod lists) and releases per look at most; the rest wait for the next. */
export const FAILSAFE_MAX_RELEASES = 20;

/** What the fail-safe reads from its environment. */
export interface FailsafeConfig {
  /** The fail-safe's own node and pod (downward API): the source of its Events. */
  readonly nodeName: string;
  readonly podName: string;
  readonly podNamespace: string;
  readonly graceSeconds: number;
}

/** The downward API fields the fail-safe reads, as the sidecar's ({@link ENV}). */
const FIELD_REFS: readonly { readonly name: string; readonly fieldPath: string }[] = [
  { name: ENV.nodeName, fieldPath: 'spec.nodeName' },
  { name: ENV.podName, fieldPath: 'metadata.name' },
  { name: ENV.podNamespace, fieldPath: 'metadata.namespace' },
];

/** The fail-safe container's environment, in the order the pod spec lists it. */
export function renderFailsafeEnv(graceSeconds: number): readonly SidecarEnvVar[] {
  return [...FIELD_REFS, { name: FAILSAFE_ENV.graceSeconds, value: String(graceSeconds) }];
}

/** The range of the fail-safe's grace, in seconds: a gate deadline's. */
export const FAILSAFE_GRACE_RANGE = LIMITS.deadlineSeconds;

/** Why `graceSeconds` is not a grace the fail-safe accepts, or undefined when it is one. */
export function failsafeGraceError(graceSeconds: number): string | undefined {
  const { min, max } = FAILSAFE_GRACE_RANGE;
  return Number.isInteger(graceSeconds) && graceSeconds >= min && graceSeconds <= max
    ? undefined
    : `must be a whole number of seconds from ${min} to ${max}`;
}

/** Reads the fail-safe's configuration; throws a {@link ConfigError} with an exact message. */
export function failsafeConfigFromEnv(env: Env): FailsafeConfig {
  const need = (key: string): string => {
    const v = env[key];
    if (v === undefined || v === '') throw new ConfigError(`environment variable ${key} is required`);
    return v;
  };
  const raw = env[FAILSAFE_ENV.graceSeconds];
  const graceSeconds = raw === undefined || raw === '' ? FAILSAFE_DEFAULT_GRACE_SECONDS : /^\d+$/.test(raw) ? Number(raw) : NaN;
  const invalid = failsafeGraceError(graceSeconds);
  if (invalid !== undefined) throw new ConfigError(`environment variable ${FAILSAFE_ENV.graceSeconds} ${invalid}, got "${raw ?? ''}"`);
  return { nodeName: need(ENV.nodeName), podName: need(ENV.podName), podNamespace: need(ENV.podNamespace), graceSeconds };
}
