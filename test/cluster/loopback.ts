/**
 * etcd + kube-apiserver alone, on free loopback ports, with a fresh data dir: the control plane of
 * the integration and gitops tiers. Each caller passes its own daemon prefix, so one tier never
 * stops another's control plane when both run in one vitest invocation.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { STATE_DIR } from './config.js';
import { adminCert, startApiserver, startEtcd, stopControlPlane, waitApiserverReady, type ControlPlaneOptions } from './controlplane.js';
import { writeKubeconfig } from './pki.js';

/** A running loopback control plane. */
export interface LoopbackControlPlane {
  readonly url: string;
  readonly kubeconfig: string;
  /** Stops the daemons and removes the data dir (kept with PREWARM_KEEP_CLUSTER=1). */
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
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

/** Starts etcd and the apiserver under `prefix` and waits until the apiserver is ready. */
export async function startLoopbackControlPlane(prefix: string, log: (message: string) => void): Promise<LoopbackControlPlane> {
  mkdirSync(STATE_DIR, { recursive: true });
  const dataDir = mkdtempSync(join(STATE_DIR, `${prefix}-`));
  await stopControlPlane(prefix); // leftovers of a crashed run
  const o: ControlPlaneOptions = {
    prefix,
    dataDir,
    etcdClientPort: await freePort(),
    etcdPeerPort: await freePort(),
    apiserverBind: '127.0.0.1',
    apiserverPort: await freePort(),
    advertiseAddress: '127.0.0.1',
    endpointReconciler: 'none',
  };
  const t0 = Date.now();
  await startEtcd(o);
  await startApiserver(o);
  const url = `https://127.0.0.1:${o.apiserverPort}`;
  try {
    await waitApiserverReady(o, url);
  } catch (e) {
    await stopControlPlane(prefix);
    throw e;
  }
  const kubeconfig = join(dataDir, 'admin.kubeconfig');
  writeKubeconfig(kubeconfig, url, adminCert(), 'prewarm-admin');
  log(`etcd + kube-apiserver ready at ${url} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  return {
    url,
    kubeconfig,
    async stop() {
      await stopControlPlane(prefix);
      if (process.env['PREWARM_KEEP_CLUSTER'] !== '1') rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
