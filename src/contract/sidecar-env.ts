/**
 * The sidecar's environment, rendered by synthesis and parsed at start; a bad one fails loudly.
 * The gate travels here and in pools.json on purpose: the environment rolls with the pod, so its
 * own gate never changes under it; pools.json, refreshed in place, serves the other pools.
 */
import { isKubernetesNodeTaint, isQualifiedKey } from './gate-key.js';
import { DEFAULTS, ENV, LIMITS, POOLS_FILE, POOLS_MOUNT_PATH, PULL_SECRETS_MOUNT_PATH } from './names.js';

/** The literal values synthesis writes: the pool and its settings. */
export interface SidecarSettings extends SidecarGate {
  readonly poolId: string;
  readonly nodeLabelKey: string;
  readonly nodeAnnotationKey: string;
  /** 0 disables the tag refresh. */
  readonly refreshSeconds: number;
  /** 0 disables `/metrics`. */
  readonly metricsPort: number;
}

/** The pool's gate as its sidecar's environment states it. */
export interface SidecarGate {
  /** Empty: this pool does not gate. */
  readonly gateTaintKey: string;
  readonly deadlineSeconds: number;
}

/** Everything the decision core needs to know about "who am I": the settings and what the downward API fills in. */
export interface ReconcilerConfig extends SidecarSettings {
  readonly nodeName: string;
  readonly podName: string;
  readonly podNamespace: string;
  /** Address `/metrics` binds to; loopback unless the pod IP is given. */
  readonly metricsHost: string;
}

export type Env = Readonly<Record<string, string | undefined>>;

/** One variable of the sidecar container: a literal value, or a downward API field the kubelet fills in. */
export type SidecarEnvVar = { readonly name: string; readonly value: string } | { readonly name: string; readonly fieldPath: string };

const FIELD_REFS: readonly { readonly name: string; readonly fieldPath: string }[] = [
  { name: ENV.nodeName, fieldPath: 'spec.nodeName' },
  { name: ENV.podName, fieldPath: 'metadata.name' },
  { name: ENV.podNamespace, fieldPath: 'metadata.namespace' },
  { name: ENV.podIP, fieldPath: 'status.podIP' },
];

/** The sidecar container's environment, in the order the pod spec lists it: the downward API fields, then the settings. */
export function renderSidecarEnv(s: SidecarSettings): readonly SidecarEnvVar[] {
  return [
    ...FIELD_REFS,
    { name: ENV.pool, value: s.poolId },
    { name: ENV.nodeLabelKey, value: s.nodeLabelKey },
    { name: ENV.nodeAnnotationKey, value: s.nodeAnnotationKey },
    { name: ENV.gateTaintKey, value: s.gateTaintKey },
    { name: ENV.deadlineSeconds, value: String(s.deadlineSeconds) },
    { name: ENV.refreshSeconds, value: String(s.refreshSeconds) },
    { name: ENV.metricsPort, value: String(s.metricsPort) },
  ];
}

/** What the process would see, downward API fields taken from `fields`; for runs outside a pod. */
export function resolveSidecarEnv(vars: readonly SidecarEnvVar[], fields: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const v of vars) {
    const value = 'value' in v ? v.value : fields[v.fieldPath];
    if (value !== undefined) env[v.name] = value;
  }
  return env;
}

/** Thrown for invalid sidecar configuration; `main` reports it and exits non-zero. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function required(env: Env, key: string): string {
  const v = env[key];
  if (v === undefined || v === '') throw new ConfigError(`environment variable ${key} is required`);
  return v;
}

/** An integer from 0 to `max` (seconds, or a port), or `dflt` when unset. */
function wholeNumber(env: Env, key: string, dflt: number, max: number): number {
  const v = env[key];
  if (v === undefined || v === '') return dflt;
  if (!/^\d+$/.test(v) || Number(v) > max) {
    throw new ConfigError(`environment variable ${key} must be an integer between 0 and ${max}, got "${v}"`);
  }
  return Number(v);
}

/**
 * The gate key, checked again although synthesis chose it: the sidecar holds a token that patches
 * nodes, so it never removes a taint Kubernetes itself sets and lifts.
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

/** Reads the gate from a sidecar environment; doctor reads it so from a DaemonSet template. */
export function parseSidecarGate(env: Env): SidecarGate {
  const deadlineSeconds = wholeNumber(env, ENV.deadlineSeconds, DEFAULTS.deadlineSeconds, LIMITS.deadlineSeconds.max);
  if (deadlineSeconds === 0) throw new ConfigError(`environment variable ${ENV.deadlineSeconds} must be positive`);
  return { gateTaintKey: gateTaintKey(env[ENV.gateTaintKey] ?? ''), deadlineSeconds };
}

/** Reads the sidecar's configuration from an environment (normally `process.env`). */
export function configFromEnv(env: Env): ReconcilerConfig {
  const gate = parseSidecarGate(env);
  return {
    nodeName: required(env, ENV.nodeName),
    podName: required(env, ENV.podName),
    podNamespace: required(env, ENV.podNamespace),
    poolId: required(env, ENV.pool),
    nodeLabelKey: required(env, ENV.nodeLabelKey),
    nodeAnnotationKey: required(env, ENV.nodeAnnotationKey),
    ...gate,
    refreshSeconds: wholeNumber(env, ENV.refreshSeconds, DEFAULTS.refreshSeconds, LIMITS.refreshSeconds.max),
    metricsPort: wholeNumber(env, ENV.metricsPort, DEFAULTS.metricsPort, 65_535),
    // eslint-disable-next-line @typescript-eslint/prefer-nullish-coalescing -- an empty value falls back too
    metricsHost: env[ENV.podIP] || '127.0.0.1',
  };
}

/** A development override of the sidecar: its variable, what it changes, and its value when unset. */
export interface DevEnvVar {
  readonly name: string;
  readonly meaning: string;
  readonly default: string;
}

/** Development overrides, never set by synthesis: for a sidecar run outside a pull pod. */
export const DEV_ENV = {
  kubeServer: { name: 'PREWARM_KUBE_SERVER', meaning: 'apiserver URL instead of the in-cluster one', default: '' },
  kubeTokenFile: { name: 'PREWARM_KUBE_TOKEN_FILE', meaning: 'bearer token file for PREWARM_KUBE_SERVER', default: '' },
  kubeCaFile: { name: 'PREWARM_KUBE_CA_FILE', meaning: 'CA bundle for PREWARM_KUBE_SERVER', default: '' },
  poolsPath: { name: 'PREWARM_POOLS_PATH', meaning: 'pools.json elsewhere than its mount', default: `${POOLS_MOUNT_PATH}/${POOLS_FILE}` },
  pullSecretsDir: {
    name: 'PREWARM_PULL_SECRETS_DIR',
    meaning: 'pull secrets elsewhere than their mount',
    default: PULL_SECRETS_MOUNT_PATH,
  },
  plainHttpRegistries: {
    name: 'PREWARM_PLAIN_HTTP_REGISTRIES',
    meaning: 'comma-separated registry hosts spoken to over plain HTTP',
    default: '',
  },
  terminationLog: { name: 'PREWARM_TERMINATION_LOG', meaning: 'termination message file', default: '/dev/termination-log' },
  timeScale: {
    name: 'PREWARM_TIME_SCALE',
    meaning: "how many times faster than the wall clock the sidecar's clock runs; a whole number from 1 to 100000, else ignored",
    default: '1',
  },
} as const satisfies Readonly<Record<string, DevEnvVar>>;

/** The value of the override `v` in `env`, or its default. */
export function devEnv(env: Env, v: DevEnvVar): string {
  return env[v.name] ?? v.default;
}
