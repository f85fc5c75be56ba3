/**
 * The sidecar's start-up input (environment, pools.json, endpoint), checked before any request.
 * Each problem is one {@link StartupError} line, which `kubectl logs` and `describe pod` both show.
 */
import fs from 'node:fs';
import { parsePoolsFile, PoolsFileError, type PoolsFile } from '../contract/pools-file.js';
import { ConfigError, configFromEnv, DEV_ENV, devEnv, type ReconcilerConfig } from '../contract/sidecar-env.js';
import type { Endpoint } from '../http/client.js';
import { inClusterEndpoint } from './adapters/kube.js';

/** Where the kubelet mounts the container's termination message file. */
export const TERMINATION_LOG = DEV_ENV.terminationLog.default;
/** Exit code of a sidecar that refused its configuration (1 is left to unexpected errors). */
export const EXIT_BAD_CONFIG = 2;

/** Everything the sidecar needs before it starts. */
export interface Startup {
  readonly config: ReconcilerConfig;
  readonly pools: PoolsFile;
  readonly endpoint: Endpoint;
}

/** Bad start-up input; its message is the single line reported. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** File reads, replaceable in tests. */
export type ReadFile = (path: string) => Buffer;

const defaultRead: ReadFile = (p) => fs.readFileSync(p);

/** The message of anything thrown, on one line (a multi-line message would split the report). */
export function oneLine(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

function read(readFile: ReadFile, path: string, what: string): Buffer {
  try {
    return readFile(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new StartupError(`cannot read ${what} ${path}${code ? ` (${code})` : `: ${oneLine(e)}`}`);
  }
}

/** The apiserver endpoint: the in-cluster one, or the one the development overrides (`DEV_ENV.kube*`) name. */
export function endpointFromEnv(env: Readonly<Record<string, string | undefined>>, readFile: ReadFile = defaultRead): Endpoint {
  const server = devEnv(env, DEV_ENV.kubeServer);
  if (!server) {
    try {
      return inClusterEndpoint(env);
    } catch (e) {
      throw new StartupError(`no apiserver endpoint: ${oneLine(e)}`);
    }
  }
  const tokenFile = devEnv(env, DEV_ENV.kubeTokenFile);
  const caFile = devEnv(env, DEV_ENV.kubeCaFile);
  if (tokenFile) read(readFile, tokenFile, 'the token file');
  return {
    server,
    ...(caFile ? { ca: read(readFile, caFile, 'the CA file') } : {}),
    ...(tokenFile ? { token: () => readFile(tokenFile).toString('utf8').trim() } : {}),
  };
}

/** Reads and checks the environment, pools.json and the endpoint; throws a {@link StartupError}. */
export function loadStartup(env: Readonly<Record<string, string | undefined>>, readFile: ReadFile = defaultRead): Startup {
  let config: ReconcilerConfig;
  try {
    config = configFromEnv(env);
  } catch (e) {
    if (e instanceof ConfigError) throw new StartupError(e.message);
    throw e;
  }
  return { config, pools: loadPools(env, readFile), endpoint: endpointFromEnv(env, readFile) };
}

/** pools.json, from its mount or `DEV_ENV.poolsPath`; throws a {@link StartupError}. */
export function loadPools(env: Readonly<Record<string, string | undefined>>, readFile: ReadFile = defaultRead): PoolsFile {
  const poolsPath = devEnv(env, DEV_ENV.poolsPath);
  try {
    return parsePoolsFile(read(readFile, poolsPath, 'pools.json at').toString('utf8'));
  } catch (e) {
    if (e instanceof PoolsFileError) throw new StartupError(`${oneLine(e)} (${poolsPath})`);
    throw e;
  }
}

/** Reports a start-up failure: one JSON line on stderr, and the reason in the termination-log file when there is one. */
export function reportStartupFailure(
  reason: string,
  write: (line: string) => void = (l) => process.stderr.write(l),
  terminationLog: string = TERMINATION_LOG,
): void {
  write(`${JSON.stringify({ ts: new Date().toISOString(), level: 'error', msg: reason, component: 'prewarm-reconciler' })}\n`);
  try {
    fs.writeFileSync(terminationLog, `${reason}\n`);
  } catch {
    // No termination log here (not in a pod, or read-only): stderr and FallbackToLogsOnError remain.
  }
}
