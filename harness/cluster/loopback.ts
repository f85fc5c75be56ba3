/**
 * Harness components on free loopback ports, with fresh data dirs, for tiers that need no netns:
 * - etcd + kube-apiserver alone: the control plane of the integration and gitops tiers, optionally
 *   with kube-controller-manager running only the controllers a test names, and kube-scheduler
 *   (both serve no port: `--secure-port=0`);
 * - the hub's two registry configurations (plain HTTP, and TLS + basic auth), e.g. for `prewarm pin`.
 * Each caller passes its own daemon prefix, so one tier never stops another's daemons when both
 * run in one vitest invocation; the checkout's own suffix on it keeps two checkouts on one machine
 * from stopping each other's (pid files live in the machine-wide RUN_DIR).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { STATE_DIR } from './config.js';
import {
  startApiserver,
  startControllerManager,
  startEtcd,
  startScheduler,
  stopControlPlane,
  waitApiserverReady,
  type ControlPlaneOptions,
} from './controlplane.js';
import { adminCert, writeKubeconfig } from './pki.js';
import { startRegistry, waitRegistry, type RegistryServer } from './registry.js';
import { missingTools, stopDaemon } from './sh.js';

/** A running loopback control plane. */
export interface LoopbackControlPlane {
  readonly url: string;
  readonly kubeconfig: string;
  /** Stops the daemons and removes the data dir (kept with PREWARM_KEEP_CLUSTER=1). */
  stop(): Promise<void>;
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolvePromise(port));
    });
  });
}

/** What runs besides etcd and the apiserver. */
export interface LoopbackControllers {
  /** kube-controller-manager `--controllers`, e.g. `['daemonset', 'serviceaccount']`. */
  readonly controllers: readonly string[];
  /** Also run kube-scheduler. */
  readonly scheduler: boolean;
}

/**
 * The daemon names of a tier in this checkout: `prefix` plus a hash of the state dir. A crashed run
 * of the same checkout is still found by them; another checkout's run of the same tier is not.
 */
function daemonPrefix(prefix: string): string {
  return `${prefix}-${createHash('sha256').update(STATE_DIR).digest('hex').slice(0, 8)}`;
}

/**
 * Starts etcd and the apiserver under `prefix` and waits until the apiserver is ready; with
 * `withControllers`, also the named controllers and the scheduler.
 */
export async function startLoopbackControlPlane(
  prefix: string,
  log: (message: string) => void,
  withControllers?: LoopbackControllers,
): Promise<LoopbackControlPlane> {
  mkdirSync(STATE_DIR, { recursive: true });
  const dataDir = mkdtempSync(join(STATE_DIR, `${prefix}-`));
  const daemons = daemonPrefix(prefix);
  await stopControlPlane(daemons); // leftovers of a crashed run
  const o: ControlPlaneOptions = {
    prefix: daemons,
    dataDir,
    etcdClientPort: await freePort(),
    etcdPeerPort: await freePort(),
    apiserverBind: '127.0.0.1',
    apiserverPort: await freePort(),
    advertiseAddress: '127.0.0.1',
    endpointReconciler: 'none',
    // Only the named controllers, and no serving port that could collide with another plane's.
    ...(withControllers === undefined ? {} : { controllers: withControllers.controllers }),
    extraControllerManagerArgs: ['--secure-port=0'],
    extraSchedulerArgs: ['--secure-port=0'],
  };
  const t0 = Date.now();
  await startEtcd(o);
  await startApiserver(o);
  const url = `https://127.0.0.1:${o.apiserverPort}`;
  try {
    await waitApiserverReady(o, url);
    if (withControllers !== undefined) {
      if (withControllers.controllers.length > 0) startControllerManager(o);
      if (withControllers.scheduler) startScheduler(o);
    }
  } catch (e) {
    await stopControlPlane(daemons);
    throw e;
  }
  const kubeconfig = join(dataDir, 'admin.kubeconfig');
  writeKubeconfig(kubeconfig, url, adminCert(), 'prewarm-admin');
  const extra = withControllers === undefined ? '' : ` (+ controllers ${withControllers.controllers.join(',')}${withControllers.scheduler ? ' + scheduler' : ''})`;
  log(`etcd + kube-apiserver${extra} ready at ${url} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  return {
    url,
    kubeconfig,
    async stop() {
      await stopControlPlane(daemons);
      if (process.env['PREWARM_KEEP_CLUSTER'] !== '1') rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Running loopback registries: `plain` and `tls` are their host:port. */
export interface LoopbackRegistries {
  readonly plain: string;
  /** TLS (certificate signed by the harness CA, CA_CRT) and basic auth for REGISTRY.user. */
  readonly tls: string;
  /** Stops both and removes their storage (kept with PREWARM_KEEP_CLUSTER=1). */
  stop(): Promise<void>;
}

/** Starts the hub's two registry configurations on 127.0.0.1 under `prefix`, and waits for them. */
export async function startLoopbackRegistries(prefix: string, log: (message: string) => void): Promise<LoopbackRegistries> {
  const missing = missingTools(['docker-registry', 'skopeo', 'umoci', 'openssl', 'htpasswd', 'socat']);
  if (missing.length > 0) throw new Error(`missing system tools: ${missing.join(', ')}; run .ci/setup-cluster.sh`);
  mkdirSync(STATE_DIR, { recursive: true });
  const dir = mkdtempSync(join(STATE_DIR, `${prefix}-registry-`));
  const servers: RegistryServer[] = [
    { name: `${daemonPrefix(prefix)}-registry`, addr: `127.0.0.1:${await freePort()}`, dir, storage: join(dir, 'plain-data'), tls: false },
    { name: `${daemonPrefix(prefix)}-registry-tls`, addr: `127.0.0.1:${await freePort()}`, dir, storage: join(dir, 'tls-data'), tls: true },
  ];
  const stop = async (): Promise<void> => {
    for (const s of servers) await stopDaemon(s.name);
  };
  await stop(); // leftovers of a crashed run
  try {
    for (const s of servers) startRegistry(s);
    for (const s of servers) await waitRegistry(s);
  } catch (e) {
    await stop();
    throw e;
  }
  const [plain, tls] = servers.map((s) => s.addr) as [string, string];
  log(`registries ready on ${plain} (plain HTTP) and ${tls} (TLS + basic auth)`);
  return {
    plain,
    tls,
    async stop() {
      await stop();
      if (process.env['PREWARM_KEEP_CLUSTER'] !== '1') rmSync(dir, { recursive: true, force: true });
    },
  };
}
