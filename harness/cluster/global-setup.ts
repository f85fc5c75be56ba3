/**
 * vitest globalSetup of the e2e project: brings the test cluster up (or reuses a running one),
 * provides the admin kubeconfig path (inject('kubeconfig'), env PREWARM_KUBECONFIG / KUBECONFIG)
 * and tears it down at the end unless PREWARM_KEEP_CLUSTER=1 or it was already running.
 * Builds the cluster's components first (cached; build.ts). A missing prerequisite or a failed build
 * throws: the run fails, nothing is skipped.
 */
import type { TestProject } from 'vitest/node';
import { buildComponents, CLUSTER_COMPONENTS } from './build.js';
import { ADMIN_KUBECONFIG, checkPrerequisites, down, isUp, up } from './cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  buildComponents(CLUSTER_COMPONENTS);
  checkPrerequisites();
  const t0 = Date.now();
  const reused = await isUp();
  if (!reused) await up({ log: (m) => console.log(`[cluster] ${m}`) });
  console.log(
    `[cluster] ${reused ? 'reusing running cluster' : 'cluster up'} in ${((Date.now() - t0) / 1000).toFixed(1)}s; kubeconfig ${ADMIN_KUBECONFIG}`,
  );
  project.provide('kubeconfig', ADMIN_KUBECONFIG);
  process.env['PREWARM_KUBECONFIG'] = ADMIN_KUBECONFIG;
  process.env['KUBECONFIG'] = ADMIN_KUBECONFIG;
  return async () => {
    if (process.env['PREWARM_KEEP_CLUSTER'] === '1' || reused) {
      console.log(
        `[cluster] left running (${reused ? 'it was running before' : 'PREWARM_KEEP_CLUSTER=1'}); stop it with: npm run cluster -- down`,
      );
      return;
    }
    await down();
  };
}
