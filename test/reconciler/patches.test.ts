import { describe, expect, it } from 'vitest';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/contract/names.js';
import type { KTaint } from '../../src/reconciler/kube-types.js';
import { metadataPatch, taintRemovalPatch } from '../../src/reconciler/patches.js';
import { config, gate, iso, node } from './fixtures.js';

describe('taint removal patch', () => {
  it('removes every taint with the key, guarded by tests, highest index first', () => {
    const other: KTaint = { key: 'x', effect: 'NoSchedule' };
    const ne: KTaint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoExecute', timeAdded: iso(1) };
    expect(taintRemovalPatch(node({ taints: [gate, other, ne] }), DEFAULT_GATE_TAINT_KEY)).toEqual([
      { op: 'test', path: '/spec/taints/2', value: ne },
      { op: 'remove', path: '/spec/taints/2' },
      { op: 'test', path: '/spec/taints/0', value: gate },
      { op: 'remove', path: '/spec/taints/0' },
    ]);
    expect(taintRemovalPatch(node({ taints: [other] }), DEFAULT_GATE_TAINT_KEY)).toBeUndefined();
  });
});

describe('metadata patch', () => {
  const c = config();
  it.each([
    ['label only', { label: 'warm' }, { metadata: { labels: { 'prewarm.dev/gpu': 'warm' } } }],
    ['annotation only', { annotation: '{}' }, { metadata: { annotations: { 'status.prewarm.dev/gpu': '{}' } } }],
    [
      'removal of both',
      { label: null, annotation: null },
      { metadata: { labels: { 'prewarm.dev/gpu': null }, annotations: { 'status.prewarm.dev/gpu': null } } },
    ],
  ])('sets or removes only our keys: %s', (_name, d, want) => {
    expect(metadataPatch(c, d)).toEqual(want);
  });
  it('is undefined when nothing changes: no write', () => {
    expect(metadataPatch(c, {})).toBeUndefined();
  });
});
