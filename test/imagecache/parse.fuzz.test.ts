/**
 * Property-based fuzzing of the loader: whatever the text, parsing never throws, and every
 * problem comes back as a diagnostic that carries a file and a position or field path.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseFiles } from '../../src/imagecache/parse.js';

const valid = [
  'apiVersion: prewarm.dev/v1alpha1',
  'kind: ImageCache',
  'metadata: {name: c, namespace: ns}',
  'spec:',
  '  cacheSpec:',
  '  - images: [redis:7, "ghcr.io/a/b:1"]',
  '    nodeSelector: {tier: backend}',
  '    tolerations: [{key: k, operator: Exists}]',
  '  gate: {deadline: 10m}',
  '',
].join('\n');

function checkInvariants(text: string): void {
  const result = parseFiles([{ path: 'fuzz.yaml', text }]);
  for (const d of result.diagnostics) {
    expect(d.file).toBe('fuzz.yaml');
    expect(typeof d.message).toBe('string');
    expect(d.message.length).toBeGreaterThan(0);
    // Every diagnostic points somewhere: a line, or a field path.
    expect(d.line > 0 || d.path !== '').toBe(true);
  }
  if (result.caches.length > 0) {
    expect(result.diagnostics.filter((d) => d.severity === 'error' && d.document === 1)).toEqual([]);
  }
}

describe('parseFiles under fuzzing', () => {
  it('never throws on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => checkInvariants(text)),
      { numRuns: 400 },
    );
  });

  it('never throws on arbitrary YAML values in ImageCache clothing', () => {
    const value = fc.jsonValue({ maxDepth: 4 });
    fc.assert(
      fc.property(value, value, (spec, metadata) => {
        checkInvariants(stringify({ apiVersion: 'prewarm.dev/v1alpha1', kind: 'ImageCache', metadata, spec }));
      }),
      { numRuns: 300 },
    );
  });

  it('never throws when a valid spec is cut, spliced or mutated', () => {
    fc.assert(
      fc.property(fc.nat(valid.length), fc.nat(valid.length), fc.string({ maxLength: 12 }), (a, b, insert) => {
        const [from, to] = a < b ? [a, b] : [b, a];
        checkInvariants(valid.slice(0, from) + insert + valid.slice(to));
      }),
      { numRuns: 500 },
    );
  });

  it('passes over other manifests and plain YAML mixed in, reporting nothing about them', () => {
    const other = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }).map((spec) => stringify({ apiVersion: 'apps/v1', kind: 'Deployment', spec })),
      fc
        .dictionary(
          fc.string().filter((k) => k !== 'apiVersion' && k !== 'kind'),
          fc.jsonValue({ maxDepth: 2 }),
        )
        .map((d) => stringify(d)),
      fc.array(fc.jsonValue({ maxDepth: 2 })).map((a) => stringify(a)),
    );
    const document = fc.oneof(fc.constant(undefined), other);
    fc.assert(
      fc.property(fc.array(document, { maxLength: 6 }), (docs) => {
        const text = docs.map((d, i) => d ?? valid.replace('name: c,', `name: c${i},`)).join('---\n');
        const result = parseFiles([{ path: 'mixed.yaml', text }]);
        expect(result.diagnostics).toEqual([]);
        expect(result.caches).toHaveLength(docs.filter((d) => d === undefined).length);
        const others = docs.filter((d) => d !== undefined).length;
        expect(result.skipped).toMatchObject({ documents: others, files: others > 0 ? 1 : 0 });
      }),
      { numRuns: 200 },
    );
  });

  it('accepts the unmutated spec', () => {
    expect(parseFiles([{ path: 'v.yaml', text: valid }]).diagnostics).toEqual([]);
  });
});
