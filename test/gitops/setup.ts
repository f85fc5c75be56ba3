/**
 * vitest globalSetup of the gitops project. Fails loudly when a prerequisite cannot be made.
 * 1. `npm run build`: the plugin runs what ships, lib/src/cli/bin.js.
 * 2. harness/argocd/build.sh: Argo CD's real argocd-cmp-server and the cmp-client driver
 *    (cached; about 5 minutes cold on 2 cores, instant warm). Provides inject('argocdBin').
 * 3. test/gitops/fetch-crds.sh: Flux's, Argo CD's, the Prometheus Operator's and Karpenter's CRDs
 *    and Argo CD's install.yaml, from their Go modules. Provides inject('crdDir').
 * 4. test/gitops/renovate-install.sh: the pinned Renovate CLI, in a cache folder of its own (about
 *    10 minutes cold on 2 cores, instant warm). Provides inject('renovateBin').
 * 5. etcd + kube-apiserver on loopback, the same way as test/integration/setup.ts but under its own
 *    daemon prefix ("gitops"), so it never stops the integration project's control plane when both
 *    projects run in one vitest invocation. Provides inject('kubeconfig').
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildComponents } from '../../harness/cluster/build.js';
import { REPO_DIR, requireBinaries } from '../../harness/cluster/config.js';
import { startLoopbackControlPlane } from '../../harness/cluster/loopback.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    argocdBin: string;
    crdDir: string;
    renovateBin: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let t0 = Date.now();
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: REPO_DIR, stdio: ['ignore', 'inherit', 'inherit'], timeout: 600_000 });
  console.log(`[gitops] npm run build in ${((Date.now() - t0) / 1000).toFixed(1)}s`);

  t0 = Date.now();
  const out = execFileSync('bash', [join(REPO_DIR, 'harness/argocd/build.sh')], {
    cwd: REPO_DIR,
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 1_800_000,
    encoding: 'utf8',
  });
  const argocdBin = lastLine(out);
  console.log(`[gitops] argocd-cmp-server ready in ${((Date.now() - t0) / 1000).toFixed(1)}s at ${argocdBin}`);
  project.provide('argocdBin', argocdBin);

  const crdDir = lastLine(
    execFileSync('bash', [join(REPO_DIR, 'test/gitops/fetch-crds.sh')], {
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 600_000,
      encoding: 'utf8',
    }),
  );
  project.provide('crdDir', crdDir);

  t0 = Date.now();
  const renovateBin = lastLine(
    execFileSync('bash', [join(REPO_DIR, 'test/gitops/renovate-install.sh')], {
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 1_800_000,
      encoding: 'utf8',
    }),
  );
  console.log(`[gitops] renovate ready in ${((Date.now() - t0) / 1000).toFixed(1)}s at ${renovateBin}`);
  project.provide('renovateBin', renovateBin);

  buildComponents(['etcd', 'kubernetes']);
  requireBinaries(['etcd', 'kubeApiserver', 'kubectl']);
  const cp = await startLoopbackControlPlane('gitops', (m) => console.log(`[gitops] ${m}`));
  project.provide('kubeconfig', cp.kubeconfig);
  return () => cp.stop();
}

/** The last line a set-up script printed: the path it made; a script that printed none failed. */
function lastLine(out: string): string {
  const line = out.trim().split('\n').pop() ?? '';
  if (line === '') throw new Error('a gitops set-up script printed no path');
  return line;
}
