/**
 * The sidecar's entry point: reads the environment set by synthesis, wires the adapters to the
 * controller, serves /metrics, and on SIGTERM removes our label and annotation before exiting.
 *
 * Run as `node --max-old-space-size=24 lib/reconciler/main.js`. Besides the contract variables
 * (ENV in src/contract/names.ts) a few development overrides exist, never set by synthesis:
 * - PREWARM_KUBE_SERVER / PREWARM_KUBE_TOKEN_FILE / PREWARM_KUBE_CA_FILE: an apiserver other than
 *   the in-cluster one (bench, local runs);
 * - PREWARM_POOLS_PATH: pools.json elsewhere than POOLS_MOUNT_PATH;
 * - PREWARM_PULL_SECRETS_DIR: pull secrets elsewhere than PULL_SECRETS_MOUNT_PATH;
 * - PREWARM_PLAIN_HTTP_REGISTRIES: comma-separated registry hosts spoken to over plain HTTP.
 */
import fs from 'node:fs';
import { POOLS_FILE, POOLS_MOUNT_PATH, PULL_SECRETS_MOUNT_PATH, SIDECAR_CONTAINER } from '../contract/names.js';
import { parsePoolsFile, PoolsFileError } from '../contract/pools-file.js';
import { ConfigError, configFromEnv } from './config.js';
import { Controller } from './controller.js';
import { KubeHttp, USER_AGENT, type Endpoint } from './adapters/http.js';
import { inClusterEndpoint, KubeEventSink, KubeNodePort, KubePodSource, KubePoolPodSource } from './adapters/kube.js';
import { jsonLogger } from './adapters/log.js';
import { ProcRestarter } from './adapters/proc.js';
import { OciRegistry } from '../registry/client.js';
import { loadKeyring } from '../registry/keyring.js';
import { serveMetrics, systemClock } from './adapters/system.js';
import { Metrics } from './metrics.js';

function endpointFromEnv(env: NodeJS.ProcessEnv): Endpoint {
  const server = env.PREWARM_KUBE_SERVER;
  if (!server) return inClusterEndpoint(env);
  const tokenFile = env.PREWARM_KUBE_TOKEN_FILE;
  const caFile = env.PREWARM_KUBE_CA_FILE;
  return {
    server,
    ...(caFile ? { ca: fs.readFileSync(caFile) } : {}),
    ...(tokenFile ? { token: () => fs.readFileSync(tokenFile, 'utf8').trim() } : {}),
  };
}

/** Runs the sidecar until SIGTERM; resolves with the process exit code. */
export async function main(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const boot = jsonLogger({ component: 'prewarm-reconciler' });
  let config;
  let pools;
  try {
    config = configFromEnv(env);
    pools = parsePoolsFile(fs.readFileSync(env.PREWARM_POOLS_PATH ?? `${POOLS_MOUNT_PATH}/${POOLS_FILE}`, 'utf8'));
  } catch (e) {
    boot.error('invalid configuration', { err: e instanceof ConfigError || e instanceof PoolsFileError ? e.message : e });
    return 2;
  }
  const log = jsonLogger({ component: 'prewarm-reconciler', pool: config.poolId, node: config.nodeName, pod: config.podName });
  const kube = new KubeHttp(endpointFromEnv(env));
  const metrics = new Metrics();
  const registry =
    config.refreshSeconds > 0
      ? new OciRegistry({
          keyring: loadKeyring(env.PREWARM_PULL_SECRETS_DIR ?? PULL_SECRETS_MOUNT_PATH),
          userAgent: USER_AGENT,
          plainHttp: new Set((env.PREWARM_PLAIN_HTTP_REGISTRIES ?? '').split(',').filter(Boolean)),
        })
      : undefined;
  const controller = new Controller(
    {
      pods: new KubePodSource(kube, config.podNamespace, config.podName),
      poolPods: new KubePoolPodSource(kube, config.podNamespace, config.poolId, config.nodeName),
      nodes: new KubeNodePort(kube, config.nodeName),
      events: new KubeEventSink(kube, config, () => systemClock.now()),
      clock: systemClock,
      log,
      metrics,
      ...(registry ? { registry, restarter: new ProcRestarter() } : {}),
    },
    config,
    pools,
    { sidecarName: SIDECAR_CONTAINER },
  );
  const stop = new AbortController();
  const onSignal = (sig: string): void => {
    if (stop.signal.aborted) return;
    log.info('signal received; cleaning up', { signal: sig });
    stop.abort();
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const served = config.metricsPort > 0 ? await serveMetrics(metrics, config.metricsHost, config.metricsPort) : undefined;
  log.info('started', {
    metrics: served ? `${config.metricsHost}:${served.port}` : 'off',
    gate: config.gateTaintKey || 'off',
    deadlineSeconds: config.deadlineSeconds,
    refreshSeconds: config.refreshSeconds,
  });
  await controller.run(stop.signal);
  served?.server.close();
  kube.close();
  log.info('stopped');
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    jsonLogger({ component: 'prewarm-reconciler' }).error('fatal', { err: e });
    process.exitCode = 1;
  },
);
