/**
 * vitest project definitions for the tiers that need the harness. Add them to the root
 * vitest.config.ts `test.projects` array:
 *   import { e2eProject, integrationProject } from './test/e2e/projects.js';
 *   projects: [ {...unit...}, integrationProject, e2eProject ]
 */
export const e2eProject = {
  test: {
    name: 'e2e',
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['harness/cluster/global-setup.ts'],
    // After every test: no burst puller left on a warm or partial node.
    setupFiles: ['test/e2e/setup.ts'],
    // One cluster, 2 cores: files run one after another, in a single forked worker.
    fileParallelism: false,
    maxWorkers: 1,
    pool: 'forks' as const,
    testTimeout: 600_000,
    hookTimeout: 600_000,
    teardownTimeout: 300_000,
  },
};

/**
 * The chaos tier: faults injected into the same harness cluster, one cluster shared by
 * every case, cases one after another (a fault of the control plane is cluster-wide).
 */
export const chaosProject = {
  test: {
    ...e2eProject.test,
    name: 'chaos',
    include: ['test/chaos/**/*.test.ts'],
  },
};

/**
 * The peers tier: other pre-pullers (OpenKruise) built from their modules and run on the same
 * harness cluster; its own global setup builds them first.
 */
export const peersProject = {
  test: {
    ...e2eProject.test,
    name: 'peers',
    include: ['test/peers/**/*.test.ts'],
    globalSetup: ['test/peers/setup.ts', 'harness/cluster/global-setup.ts'],
    setupFiles: [],
  },
};

export const integrationProject = {
  test: {
    name: 'integration',
    include: ['test/integration/**/*.test.ts'],
    globalSetup: ['test/integration/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
};
