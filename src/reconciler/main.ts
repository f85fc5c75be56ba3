/**
 * The sidecar's entry point: reads the environment set by synthesis, wires the adapters to the
 * controller, serves /metrics, and on SIGTERM removes our label and annotation before exiting.
 *
 * Run with the node flags of the Dockerfile's ENTRYPOINT. Besides the contract variables (ENV in
 * src/contract/names.ts) it reads the development overrides of DEV_ENV (src/contract/sidecar-env.ts),
 * which synthesis never sets.
 *
 * Bad input (environment, pools.json, endpoint) ends the process at once with exit code 2 and one
 * line naming the problem (src/reconciler/startup.ts); anything else unexpected, with 1.
 */
import { FAILSAFE_MODE } from '../contract/failsafe.js';
import { SIDECAR_CONTAINER } from '../contract/names.js';
import { DEV_ENV, devEnv } from '../contract/sidecar-env.js';
import { Controller } from './controller.js';
import { KubeHttp, USER_AGENT } from '../http/client.js';
import { KubeEventSink, KubeNodePort, KubePodImages, KubePodSource, KubePoolPodSource } from './adapters/kube.js';
import { collectAfterGrowth } from './adapters/heap.js';
import { jsonLogger } from './adapters/log.js';
import { OciRegistry } from '../oci/client.js';
import { loadKeyring } from '../oci/keyring.js';
import { scaledClock, serveMetrics, systemClock } from './adapters/system.js';
import { Metrics } from './metrics.js';
import { EXIT_BAD_CONFIG, loadStartup, oneLine, reportStartupFailure, StartupError } from './startup.js';

/** Runs the sidecar until SIGTERM; resolves with the process exit code. */
export async function main(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let startup;
  try {
    startup = loadStartup(env);
  } catch (e) {
    if (!(e instanceof StartupError)) throw e;
    reportStartupFailure(`invalid configuration: ${e.message}`, undefined, devEnv(env, DEV_ENV.terminationLog));
    return EXIT_BAD_CONFIG;
  }
  const { config, pools } = startup;
  const scale = Number(devEnv(env, DEV_ENV.timeScale));
  const clock = Number.isInteger(scale) && scale > 1 && scale <= 100_000 ? scaledClock(scale) : systemClock;
  const log = jsonLogger({ component: 'prewarm-reconciler', pool: config.poolId, node: config.nodeName, pod: config.podName });
  const kube = new KubeHttp(startup.endpoint);
  const metrics = new Metrics();
  const registry =
    config.refreshSeconds > 0
      ? new OciRegistry({
          keyring: loadKeyring(devEnv(env, DEV_ENV.pullSecretsDir)),
          userAgent: USER_AGENT,
          plainHttp: new Set(devEnv(env, DEV_ENV.plainHttpRegistries).split(',').filter(Boolean)),
        })
      : undefined;
  const controller = new Controller(
    {
      pods: new KubePodSource(kube, config.podNamespace, config.podName),
      poolPods: new KubePoolPodSource(kube, config.podNamespace, config.poolId, config.nodeName, config.podName),
      nodes: new KubeNodePort(kube, config.nodeName),
      events: new KubeEventSink(kube, config, () => clock.now()),
      clock,
      log,
      metrics,
      ...(registry ? { registry, restarter: new KubePodImages(kube, config.podNamespace, config.podName) } : {}),
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
  const served =
    config.metricsPort > 0
      ? await serveMetrics(metrics, config.metricsHost, config.metricsPort, () => controller.imagesReleased())
      : undefined;
  log.info('started', {
    metrics: served ? `${config.metricsHost}:${served.port}` : 'off',
    gate: config.gateTaintKey || 'off',
    deadlineSeconds: config.deadlineSeconds,
    refreshSeconds: config.refreshSeconds,
  });
  const collector = collectAfterGrowth();
  await controller.run(stop.signal);
  collector.stop();
  served?.server.close();
  kube.close();
  log.info('stopped');
  return 0;
}

// The same image runs the cluster's fail-safe when synthesis starts it with FAILSAFE_MODE; its
// modules load only then, so the sidecar's footprint does not grow by them.
const entry = process.argv[2] === FAILSAFE_MODE ? (await import('./failsafe-main.js')).failsafeMain : main;
entry().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    // One line, like a configuration error: it becomes the container's termination message.
    reportStartupFailure(`fatal: ${oneLine(e)}`, undefined, devEnv(process.env, DEV_ENV.terminationLog));
    process.exitCode = 1;
  },
);
