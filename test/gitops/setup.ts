/**
 * vitest globalSetup of the gitops project. Fails loudly when a prerequisite cannot be made.
 * 1. `npm run build`: the plugin runs what ships, lib/src/cli/bin.js.
 * 2. test/gitops/argocd-build.sh: Argo CD's real argocd-cmp-server and the cmp-client driver
 *    (cached; about 5 minutes cold on 2 cores, instant warm). Provides inject('argocdBin').
 * 3. test/gitops/fetch-crds.sh: Flux's and Argo CD's CRDs and Argo CD's install.yaml, from their
 *    Go modules. Provides inject('crdDir').
 * 4. etcd + kube-apiserver on loopback, the same way as test/integration/setup.ts but under its own
 *    daemon prefix ("gitops"), so it never stops the integration project's control plane when both
 *    projects run in one vitest invocation. Provides inject('kubeconfig').
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { REPO_DIR, STATE_DIR, requireBinaries } from '../cluster/config.js';
import { adminCert, startApiserver, startEtcd, stopControlPlane, waitApiserverReady, type ControlPlaneOptions } from '../cluster/controlplane.js';
import { writeKubeconfig } from '../cluster/pki.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    argocdBin: string;
    crdDir: string;
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
  let t0 = Date.now();
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: REPO_DIR, stdio: ['ignore', 'inherit', 'inherit'], timeout: 600_000 });
  console.log(`[gitops] npm run build in ${((Date.now() - t0) / 1000).toFixed(1)}s`);

  t0 = Date.now();
  const out = execFileSync('bash', [join(REPO_DIR, 'test/gitops/argocd-build.sh')], {
    cwd: REPO_DIR,
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 1_800_000,
    encoding: 'utf8',
  });
  const argocdBin = out.trim().split('\n').pop() ?? '';
  console.log(`[gitops] argocd-cmp-server ready in ${((Date.now() - t0) / 1000).toFixed(1)}s at ${argocdBin}`);
  project.provide('argocdBin', argocdBin);

  const crdDir = execFileSync('bash', [join(REPO_DIR, 'test/gitops/fetch-crds.sh')], { stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000, encoding: 'utf8' })
    .trim().split('\n').pop() ?? '';
  project.provide('crdDir', crdDir);

  requireBinaries(['etcd', 'kubeApiserver', 'kubectl']);
  mkdirSync(STATE_DIR, { recursive: true });
  const dataDir = mkdtempSync(join(STATE_DIR, 'gitops-'));
  const prefix = 'gitops';
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
  t0 = Date.now();
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
  console.log(`[gitops] etcd + kube-apiserver ready at ${url} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  project.provide('kubeconfig', kubeconfig);
  return async () => {
    await stopControlPlane(prefix);
    if (process.env['PREWARM_KEEP_CLUSTER'] !== '1') rmSync(dataDir, { recursive: true, force: true });
  };
}
