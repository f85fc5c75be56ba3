/**
 * vitest globalSetup of the integration project: etcd 3.6 + kube-apiserver only (no nodes), on
 * loopback ports chosen at start, with a fresh data dir per run. Provides the admin kubeconfig
 * (inject('kubeconfig'), env PREWARM_KUBECONFIG / KUBECONFIG). Takes a few seconds.
 * Builds etcd and Kubernetes first (cached; harness/cluster/build.ts); a failed build fails the run.
 */
import type { TestProject } from 'vitest/node';
import { buildComponents } from '../../harness/cluster/build.js';
import { requireBinaries } from '../../harness/cluster/config.js';
import { startLoopbackControlPlane } from '../../harness/cluster/loopback.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  buildComponents(['etcd', 'kubernetes']);
  requireBinaries(['etcd', 'kubeApiserver']);
  const cp = await startLoopbackControlPlane('int', (m) => console.log(`[integration] ${m}`));
  project.provide('kubeconfig', cp.kubeconfig);
  process.env['PREWARM_KUBECONFIG'] = cp.kubeconfig;
  process.env['KUBECONFIG'] = cp.kubeconfig;
  return () => cp.stop();
}
