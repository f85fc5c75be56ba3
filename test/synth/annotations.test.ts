import { describe, expect, it } from 'vitest';
import { synthYaml } from '../../src/synth/app.js';
import { PREWARM_ANNOTATIONS_BUDGET_BYTES } from '../../src/synth/annotations.js';
import { ANNOTATION_MAX_BYTES } from '../../src/contract/annotation.js';
import { bundleOfFiles, cache } from '../helpers.js';
import { poolsOnOneNode, refusal } from './spec-fixtures.js';

// 32 sidecars of 48 MiB are over the default memory bound on their own: that is not what is tested here.
const sidecar = { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' }, maxNodeMemoryBytes: 4 * 2 ** 30 };

describe('the node annotation budget', () => {
  it('allows 32 pools on one node: half of the 256 KiB the apiserver allows for all its annotations', () => {
    expect(PREWARM_ANNOTATIONS_BUDGET_BYTES / ANNOTATION_MAX_BYTES).toBe(32);
    expect(() => synthYaml(bundleOfFiles(poolsOnOneNode(32)), sidecar)).not.toThrow();
  });

  it('refuses 33 pools that the placement contract puts on one node, at the pool whose selector makes that node', () => {
    expect(refusal(poolsOnOneNode(33), sidecar)).toEqual([
      expect.stringMatching(
        /^a\.yaml:7:5: error: document 1: spec\.cacheSpec\[0\]: a node labelled tier=web is selected by 33 pools \(ml\/.* and 28 more\): each pool's sidecar writes an annotation of up to 4 KiB on it, and the apiserver refuses a node whose annotations total over 256 KiB; at most 32 pools may select one node/,
      ),
    ]);
  });

  it('counts only what can share a node, and only with the sidecar', () => {
    const apart = Array.from({ length: 40 }, (_, i) => `  - images: [redis:7]\n    nodeSelector: {tier: t${i}}\n`).join('');
    expect(() => synthYaml(bundleOfFiles([cache('a.yaml', 'a', 'ml', `  lanes: 1\n  cacheSpec:\n${apart}`)]), sidecar)).not.toThrow();
    expect(() => synthYaml(bundleOfFiles(poolsOnOneNode(40)))).not.toThrow();
  });
});
