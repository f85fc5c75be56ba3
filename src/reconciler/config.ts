/**
 * Pure parsing of the sidecar's inputs: the environment set by synthesis (wellknown ENV) and
 * pools.json. Errors throw with exact messages so a misconfigured pod fails at start, loudly.
 */
import { DEFAULTS, ENV, LIMITS, type PoolEntry, type PoolsFile, type PoolToleration } from '../wellknown.js';

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

function seconds(env: Readonly<Record<string, string | undefined>>, key: string, dflt: number, max: number): number {
  const v = env[key];
  if (v === undefined || v === '') return dflt;
  if (!/^\d+$/.test(v) || Number(v) > max) {
    throw new ConfigError(`environment variable ${key} must be an integer between 0 and ${max}, got "${v}"`);
  }
  return Number(v);
}

/** Reads the sidecar's configuration from an environment (normally `process.env`). */
export function configFromEnv(env: Readonly<Record<string, string | undefined>>): ReconcilerConfig {
  const deadlineSeconds = seconds(env, ENV.deadlineSeconds, DEFAULTS.deadlineSeconds, LIMITS.deadlineSeconds.max);
  if (deadlineSeconds === 0) throw new ConfigError(`environment variable ${ENV.deadlineSeconds} must be positive`);
  return {
    nodeName: required(env, ENV.nodeName),
    podName: required(env, ENV.podName),
    podNamespace: required(env, ENV.podNamespace),
    poolId: required(env, ENV.pool),
    nodeLabelKey: required(env, ENV.nodeLabelKey),
    nodeAnnotationKey: required(env, ENV.nodeAnnotationKey),
    gateTaintKey: env[ENV.gateTaintKey] ?? '',
    deadlineSeconds,
    refreshSeconds: seconds(env, ENV.refreshSeconds, DEFAULTS.refreshSeconds, LIMITS.refreshSeconds.max),
    metricsPort: seconds(env, ENV.metricsPort, DEFAULTS.metricsPort, 65_535),
    metricsHost: env[ENV.podIP] || '127.0.0.1',
  };
}

function isRecordOfStrings(v: unknown): v is Record<string, string> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
}

function parseToleration(t: unknown, where: string): PoolToleration {
  if (typeof t !== 'object' || t === null) throw new ConfigError(`${where}: toleration must be an object`);
  const o = t as Record<string, unknown>;
  for (const k of ['key', 'operator', 'value', 'effect']) {
    if (o[k] !== undefined && typeof o[k] !== 'string') throw new ConfigError(`${where}: toleration ${k} must be a string`);
  }
  return o as PoolToleration;
}

/** Parses and checks pools.json; the sidecar refuses to start on a malformed file. */
export function parsePoolsFile(text: string): PoolsFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`pools.json is not valid JSON: ${(e as Error).message}`);
  }
  const pools = (raw as { pools?: unknown } | null)?.pools;
  if (!Array.isArray(pools)) throw new ConfigError('pools.json: "pools" must be an array');
  const out: PoolEntry[] = pools.map((p: unknown, i): PoolEntry => {
    const where = `pools.json: pools[${i}]`;
    if (typeof p !== 'object' || p === null) throw new ConfigError(`${where} must be an object`);
    const o = p as Record<string, unknown>;
    for (const k of ['id', 'namespace', 'nodeLabelKey', 'gateTaintKey']) {
      if (typeof o[k] !== 'string') throw new ConfigError(`${where}.${k} must be a string`);
    }
    if (!isRecordOfStrings(o.nodeSelector)) throw new ConfigError(`${where}.nodeSelector must map strings to strings`);
    if (!Array.isArray(o.tolerations)) throw new ConfigError(`${where}.tolerations must be an array`);
    const d = o.deadlineSeconds;
    if (d !== undefined && (typeof d !== 'number' || !Number.isInteger(d) || d <= 0)) {
      throw new ConfigError(`${where}.deadlineSeconds must be a positive integer`);
    }
    const entry: PoolEntry = {
      id: o.id as string,
      namespace: o.namespace as string,
      nodeLabelKey: o.nodeLabelKey as string,
      nodeSelector: o.nodeSelector,
      tolerations: o.tolerations.map((t: unknown, j) => parseToleration(t, `${where}.tolerations[${j}]`)),
      gateTaintKey: o.gateTaintKey as string,
      ...(d !== undefined ? { deadlineSeconds: d as number } : {}),
    };
    return entry;
  });
  return { pools: out };
}
