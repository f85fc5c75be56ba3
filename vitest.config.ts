import { defineConfig } from 'vitest/config';
import { chaosProject, e2eProject, integrationProject, peersProject } from './test/e2e/projects.js';
import { gitopsProject } from './test/gitops/project.js';

/**
 * Seven projects, one per tier:
 * - unit: pure logic and constructs, no cluster;
 * - integration: adapters against a real kube-apiserver and etcd from the harness;
 * - e2e: the real cluster with kubelets and containerd;
 * - gitops: the real argocd-cmp-server, Flux/Argo CRDs and server-side apply of dist/;
 * - peers: OpenKruise, built from its module, beside prewarm on the e2e cluster;
 * - chaos: faults (apiserver, etcd, sidecar, kubelet, nodes, registry) on the e2e cluster;
 * - fuzz: the built CLI run on generated inputs, argv and hostile servers, against its invariants.
 * `npm test` runs all of them; a missing prerequisite fails the run, never skips it.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          // A bound on a hang, not a speed target: property tests and the 150,000-diagnostic cases
          // take several seconds on a loaded 2-core machine, past vitest's 5 s default.
          testTimeout: 30_000,
          exclude: ['test/e2e/**', 'test/integration/**', 'test/gitops/**', 'test/chaos/**', 'test/fuzz/**', 'test/peers/**'],
        },
      },
      // The built CLI as child processes, a fixed seed and count: `npm run fuzz` (test/fuzz/cli.test.ts).
      { test: { name: 'fuzz', include: ['test/fuzz/**/*.test.ts'] } },
      integrationProject,
      e2eProject,
      peersProject,
      chaosProject,
      gitopsProject,
    ],
  },
});
