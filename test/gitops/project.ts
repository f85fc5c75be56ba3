/**
 * The gitops vitest project. Add it to the root vitest.config.ts `test.projects` array:
 *   import { gitopsProject } from './test/gitops/project.js';
 *   projects: [ {...unit...}, integrationProject, e2eProject, gitopsProject ]
 */
export const gitopsProject = {
  test: {
    name: 'gitops',
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/gitops/**/*.test.ts'],
    globalSetup: ['test/gitops/setup.ts'],
    // One control plane and one cmp-server per file; 2 cores.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
};
