/**
 * The fail-safe's entry point (the reconciler image started with FAILSAFE_MODE): reads its
 * environment and pools.json, and looks every period until SIGTERM. pools.json is read again at
 * every look, as the kubelet refreshes the mounted ConfigMap in place; a file that stops parsing
 * leaves the last good one in use, with a warning.
 */
import { FAILSAFE_PERIOD_SECONDS, failsafeConfigFromEnv, type FailsafeConfig } from '../contract/failsafe.js';
import type { PoolsFile } from '../contract/pools-file.js';
import { ConfigError, DEV_ENV, devEnv } from '../contract/sidecar-env.js';
import { KubeHttp, type Endpoint } from '../http/client.js';
import { KubeEventSink, KubeFailsafe } from './adapters/kube.js';
import { jsonLogger } from './adapters/log.js';
import { systemClock } from './adapters/system.js';
import { runFailsafe } from './failsafe-loop.js';
import type { Logger } from './ports.js';
import { EXIT_BAD_CONFIG, endpointFromEnv, loadPools, reportStartupFailure, StartupError } from './startup.js';

interface FailsafeStartup {
  readonly config: FailsafeConfig;
  readonly pools: PoolsFile;
  readonly endpoint: Endpoint;
}

function loadFailsafeStartup(env: NodeJS.ProcessEnv): FailsafeStartup {
  let config: FailsafeConfig;
  try {
    config = failsafeConfigFromEnv(env);
  } catch (e) {
    throw e instanceof ConfigError ? new StartupError(e.message) : e;
  }
  return { config, pools: loadPools(env), endpoint: endpointFromEnv(env) };
}

/** pools.json as the kubelet has it now; the last good file when it does not parse. */
function poolsReader(env: NodeJS.ProcessEnv, first: PoolsFile, log: Logger): () => PoolsFile {
  let last = first;
  return () => {
    try {
      last = loadPools(env);
    } catch (e) {
      log.warn('pools.json unreadable; keeping the last good one', { error: e });
    }
    return last;
  };
}

/** Runs the fail-safe until SIGTERM; resolves with the process exit code. */
export async function failsafeMain(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let start: FailsafeStartup;
  try {
    start = loadFailsafeStartup(env);
  } catch (e) {
    if (!(e instanceof StartupError)) throw e;
    reportStartupFailure(`invalid configuration: ${e.message}`, undefined, devEnv(env, DEV_ENV.terminationLog));
    return EXIT_BAD_CONFIG;
  }
  const { config } = start;
  const log = jsonLogger({ component: 'prewarm-failsafe', node: config.nodeName, pod: config.podName });
  const kube = new KubeHttp(start.endpoint);
  const pools = poolsReader(env, start.pools, log);
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  log.info('started', { graceSeconds: config.graceSeconds, periodSeconds: FAILSAFE_PERIOD_SECONDS, pools: start.pools.pools.length });
  const ports = {
    kube: new KubeFailsafe(kube, () => namespacesOf(pools())),
    events: new KubeEventSink(kube, config, () => systemClock.now()),
    clock: systemClock,
    log,
  };
  await runFailsafe(ports, pools, config.graceSeconds, stop.signal);
  kube.close();
  log.info('stopped');
  return 0;
}

/** The namespaces of the bundle's pools: where holder pods run. */
function namespacesOf(pools: PoolsFile): string[] {
  return [...new Set(pools.pools.map((p) => p.namespace))].sort();
}
