import { describe, expect, it } from 'vitest';
import { placementOf } from '../../src/contract/placement.js';
import { parsePoolsFile, renderPoolsFile } from '../../src/contract/pools-file.js';

describe('parsePoolsFile', () => {
  const entry = {
    id: 'gpu',
    namespace: 'ns',
    nodeLabelKey: 'prewarm.dev/gpu',
    nodeSelector: { a: 'b' },
    tolerations: [{ key: 'k', operator: 'Exists' }],
    gateTaintKey: '',
    deadlineSeconds: 30,
  };
  const file = (over: object): string => JSON.stringify({ pools: [{ ...entry, ...over }] });

  it('parses a valid file into the placement synth renders', () => {
    expect(parsePoolsFile(file({})).pools).toEqual([
      { id: 'gpu', namespace: 'ns', nodeLabelKey: 'prewarm.dev/gpu', placement: placementOf({ a: 'b' }, [{ key: 'k', operator: 'Exists' }]), gateTaintKey: '', deadlineSeconds: 30 },
    ]);
  });

  it('renders what it parses, byte for byte', () => {
    const text = renderPoolsFile(parsePoolsFile(file({ tolerations: [{ operator: 'Exists', effect: 'NoExecute' }], gateTaintKey: 'g/k' })).pools);
    expect(renderPoolsFile(parsePoolsFile(text).pools)).toBe(text);
  });

  it.each([
    ['{', 'pools.json is not valid JSON'],
    ['{}', 'pools.json: "pools" must be an array'],
    [JSON.stringify({ pools: [3] }), 'pools.json: pools[0] must be an object'],
    [file({ id: 1 }), 'pools.json: pools[0].id must be a string'],
    [file({ nodeSelector: { a: 1 } }), 'pools.json: pools[0].nodeSelector must map strings to strings'],
    [file({ nodeSelector: [] }), 'pools.json: pools[0].nodeSelector must map strings to strings'],
    [file({ tolerations: {} }), 'pools.json: pools[0].tolerations must be an array'],
    [file({ deadlineSeconds: 0 }), 'pools.json: pools[0].deadlineSeconds must be a positive integer'],
    [file({ tolerations: [{ key: 3 }] }), 'pools.json: pools[0].tolerations[0].key must be a string'],
    [file({ tolerations: [null] }), 'pools.json: pools[0].tolerations[0]: toleration must be an object'],
    [file({ tolerations: [{ operator: 'Lt' }] }), 'pools.json: pools[0].tolerations[0].operator must be "Exists" or "Equal"'],
    [file({ tolerations: [{ operator: 'Exists', effect: 'Never' }] }), 'pools.json: pools[0].tolerations[0].effect must be one of NoSchedule, PreferNoSchedule, NoExecute'],
    [file({ tolerations: [{ operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 1.5 }] }), 'pools.json: pools[0].tolerations[0].tolerationSeconds must be an integer'],
  ])('rejects %s', (text, msg) => {
    expect(() => parsePoolsFile(text)).toThrow(msg);
  });
});
