/**
 * Pure parsing of the sidecar's environment, set by synthesis (ENV in src/contract/names.ts); pools.json is parsed
 * by src/contract/pools-file.ts. Errors throw with exact messages so a misconfigured pod fails at
 * start, loudly.
 */
import { isKubernetesNodeTaint, isQualifiedKey } from '../contract/gate-key.js';
import { DEFAULTS, ENV, LIMITS } from '../contract/names.js';

/** Everything the decision core needs to know about "who am I". */
export interface ReconcilerConfig {
  readonly nodeName: string;
  readonly podName: string;
  readonly podNamespace: string;
  readonly poolId: string;
  readonly nodeLabelKey: string;
  readonly nodeAnnotationKey: string;
  /** Empty: this pool does not gate. */
  readonly gateTaintKey: string;
  readonly deadlineSeconds: number;
  /** 0 disables the tag refresh. */
  readonly refreshSeconds: number;
  /** 0 disables `/metrics`. */
  readonly metricsPort: number;
  /** Address `/metrics` binds to; loopback unless the pod IP is given. */
  readonly metricsHost: string;
}

/** Thrown for invalid sidecar configuration; `main` reports it and exits non-zero. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function required(env: Readonly<Record<string, string | undefined>>, key: string): string {
  const v = env[key];
  if (v === undefined || v === '') throw new ConfigError(`environment variable ${key} is required`);
  return v;
}

/** An integer from 0 to `max` (seconds, or a port), or `dflt` when unset. */
function wholeNumber(env: Readonly<Record<string, string | undefined>>, key: string, dflt: number, max: number): number {
  const v = env[key];
  if (v === undefined || v === '') return dflt;
  if (!/^\d+$/.test(v) || Number(v) > max) {
    throw new ConfigError(`environment variable ${key} must be an integer between 0 and ${max}, got "${v}"`);
  }
  return Number(v);
}

/**
 * The gate key, checked again here although synthesis chose it: the sidecar holds the token that
 * patches nodes, so whatever its environment says, it never removes a taint that Kubernetes itself
 * sets and lifts (a control-plane or not-ready taint). Which other keys a pool may gate on is
 * decided at synth time (src/contract/gate-key.ts), where the trusted allowances are known; the
 * admission policy enforces that list.
 */
function gateTaintKey(key: string): string {
  if (key === '') return key;
  if (!isQualifiedKey(key))
    throw new ConfigError(`environment variable ${ENV.gateTaintKey} is not a valid taint key: ${JSON.stringify(key.slice(0, 100))}`);
  if (isKubernetesNodeTaint(key)) {
    throw new ConfigError(
      `environment variable ${ENV.gateTaintKey} names ${JSON.stringify(key)}, a taint Kubernetes itself sets and lifts; refusing to gate on it`,
    );
  }
  return key;
}

/** Reads the sidecar's configuration from an environment (normally `process.env`). */
export function configFromEnv(env: Readonly<Record<string, string | undefined>>): ReconcilerConfig {
  const deadlineSeconds = wholeNumber(env, ENV.deadlineSeconds, DEFAULTS.deadlineSeconds, LIMITS.deadlineSeconds.max);
  if (deadlineSeconds === 0) throw new ConfigError(`environment variable ${ENV.deadlineSeconds} must be positive`);
  return {
    nodeName: required(env, ENV.nodeName),
    podName: required(env, ENV.podName),
    podNamespace: required(env, ENV.podNamespace),
    poolId: required(env, ENV.pool),
    nodeLabelKey: required(env, ENV.nodeLabelKey),
    nodeAnnotationKey: required(env, ENV.nodeAnnotationKey),
    gateTaintKey: gateTaintKey(env[ENV.gateTaintKey] ?? ''),
    deadlineSeconds,
    refreshSeconds: wholeNumber(env, ENV.refreshSeconds, DEFAULTS.refreshSeconds, LIMITS.refreshSeconds.max),
    metricsPort: wholeNumber(env, ENV.metricsPort, DEFAULTS.metricsPort, 65_535),
    // eslint-disable-next-line @typescript-eslint/prefer-nullish-coalescing -- an empty value falls back too
    metricsHost: env[ENV.podIP] || '127.0.0.1',
  };
}
