/**
 * Runs around every e2e test (vitest setupFiles of the e2e project): after each test, no burst
 * puller may be left on a node that its pool marks warm or partial.
 */
import { afterEach, expect } from 'vitest';
import { Kube } from '../../harness/kube.js';
import { settledPullersOnMarkedNodes } from '../../harness/pullers.js';

afterEach(async () => {
  const kube = new Kube();
  try {
    expect(await settledPullersOnMarkedNodes(kube), 'puller pods left on warm or partial nodes').toEqual([]);
  } finally {
    kube.close();
  }
});
