import { defineConfig } from 'vitest/config';
import { chaosProject, e2eProject, integrationProject } from './test/e2e/projects.js';
import { gitopsProject } from './test/gitops/project.js';

/**
 * Five projects, one per tier:
 * - unit: pure logic and constructs, no cluster;
 * - integration: adapters against a real kube-apiserver and etcd from the harness;
 * - e2e: the real cluster with kubelets and containerd;
 * - gitops: the real argocd-cmp-server, Flux/Argo CRDs and server-side apply of dist/;
 * - chaos: faults (apiserver, etcd, sidecar, kubelet, nodes, registry) on the e2e cluster.
 * `npm test` runs all of them; a missing prerequisite fails the run, never skips it.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/e2e/**', 'test/integration/**', 'test/gitops/**', 'test/chaos/**'],
        },
      },
      integrationProject,
      e2eProject,
      chaosProject,
      gitopsProject,
    ],
  },
});
