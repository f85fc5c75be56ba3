/**
 * vitest globalSetup of the integration project: etcd 3.6 + kube-apiserver only (no nodes), on
 * loopback ports chosen at start, with a fresh data dir per run. Provides the admin kubeconfig
 * (inject('kubeconfig'), env PREWARM_KUBECONFIG / KUBECONFIG). Takes a few seconds.
 * Missing binaries fail the run (run .ci/setup-cluster.sh).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { STATE_DIR, requireBinaries } from '../cluster/config.js';
import { adminCert, startApiserver, startEtcd, stopControlPlane, waitApiserverReady, type ControlPlaneOptions } from '../cluster/controlplane.js';
import { writeKubeconfig } from '../cluster/pki.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
  }
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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  requireBinaries(['etcd', 'kubeApiserver']);
  mkdirSync(STATE_DIR, { recursive: true });
  const dataDir = mkdtempSync(join(STATE_DIR, 'integration-'));
  const prefix = 'int';
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
  console.log(`[integration] etcd + kube-apiserver ready at ${url} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  project.provide('kubeconfig', kubeconfig);
  process.env['PREWARM_KUBECONFIG'] = kubeconfig;
  process.env['KUBECONFIG'] = kubeconfig;
  return async () => {
    await stopControlPlane(prefix);
    if (process.env['PREWARM_KEEP_CLUSTER'] !== '1') rmSync(dataDir, { recursive: true, force: true });
  };
}
