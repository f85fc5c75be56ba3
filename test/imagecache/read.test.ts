import { describe, expect, it } from 'vitest';
import {
  billionLaughs,
  doublingMerges,
  imageCacheWith,
  manyAliases,
  manyAliasesToBigAnchor,
  mergeChain,
} from '../../harness/hostile-specs.js';
import { formatDiagnostic } from '../../src/imagecache/errors.js';
import { parseFiles } from '../../src/imagecache/parse.js';
import { MAX_MERGE_DEPTH, RUN_NODE_BUDGET } from '../../src/imagecache/read.js';

const parse = (...texts: string[]) =>
  parseFiles(texts.map((text, i) => ({ path: `f${i}.yaml`, text: text.replace('name: bomb', `name: bomb-${i}`) })));

/** Every error is one line that names a file, a document and a line. */
function clean(diagnostics: readonly { message: string }[]): void {
  for (const line of diagnostics.map((d) => formatDiagnostic(d as Parameters<typeof formatDiagnostic>[0]))) {
    expect(line).toMatch(/^f\d+\.yaml:\d+:\d+: (error|warning): document \d+: /);
    expect(line).not.toContain('\n');
  }
}

// Generous timeouts: each of these took from 9 s to minutes when aliases were resolved by walking
// the document. What the test asserts is the outcome; bench:loader prints the time.
describe('reading: alias and merge-key bombs end with a result or a clean error', { timeout: 120_000 }, () => {
  it('32,000 aliases of one image are read as 32,001 images', () => {
    const r = parse(manyAliases(32_000));
    expect(r.diagnostics).toEqual([]);
    expect(r.caches[0]?.entries[0]?.images).toHaveLength(32_001);
  });

  it('doubling merge keys, 200 levels: each mapping is merged once', () => {
    const r = parse(doublingMerges(200));
    expect(r.diagnostics).toEqual([]);
    const last = r.caches[0]?.entries[200]?.nodeSelector ?? {};
    expect(Object.keys(last)).toHaveLength(201);
    expect(last['k0']).toBe('v');
  });

  it('a chain of 2,000 merges is read', () => {
    const r = parse(mergeChain(2_000));
    expect(r.diagnostics).toEqual([]);
    expect(r.caches[0]?.entries[2_000]?.nodeSelector).toEqual({ k0: 'v' });
  });

  it('billion laughs: the nested lists are refused as images, not expanded', () => {
    const r = parse(billionLaughs(9, 10));
    expect(r.caches).toEqual([]);
    expect(r.diagnostics).toHaveLength(10);
    expect(r.diagnostics.every((d) => d.message === 'must be a string, got a list')).toBe(true);
    clean(r.diagnostics);
  });

  it('1,000 aliases of an entry of 1,000 images stop at the document budget, at the alias', () => {
    const r = parse(manyAliasesToBigAnchor(1_000, 1_000));
    expect(r.caches).toEqual([]);
    expect(r.diagnostics.map(formatDiagnostic)).toEqual([
      expect.stringMatching(
        /^f0\.yaml:7:\d+: error: document 1: spec\.cacheSpec\[\d+\]\.images\[\d+\]: document is too large to read: more than 200000 nodes \(aliases and merge keys expanded\)$/,
      ),
    ]);
  });

  it('merge keys nested deeper than the limit are refused where they are', () => {
    const chain = Array.from({ length: MAX_MERGE_DEPTH + 5 }, (_, i) =>
      i === 0 ? `    m0: &m0 {k: v}` : `    m${i}: &m${i} {<<: *m${i - 1}}`,
    );
    // `status` is read by no reader, so the chain is first merged from its far end.
    const text = imageCacheWith(`  cacheSpec:\n  - images: ["x:1"]\n    nodeSelector: *m${MAX_MERGE_DEPTH + 4}\n`).replace(
      'spec:\n',
      `status:\n${chain.join('\n')}\nspec:\n`,
    );
    const r = parse(text);
    expect(r.caches).toEqual([]);
    expect(r.diagnostics.map((d) => d.message)).toEqual([`merge keys (<<) include mappings more than ${MAX_MERGE_DEPTH} levels deep`]);
    clean(r.diagnostics);
  });

  it('many files within their own limits stop at the run budget, in the file where it is spent', () => {
    // Each file is one entry of 1,000 images aliased 180 times: 181,000 nodes, under the document's budget.
    const file = manyAliasesToBigAnchor(1_000, 180);
    const files = Math.ceil(RUN_NODE_BUDGET / 180_000) + 1;
    const r = parse(...Array<string>(files).fill(file));
    const errors = r.diagnostics.filter((d) => d.severity === 'error');
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(errors[0]?.message).toBe(
      `too much to read: more than ${RUN_NODE_BUDGET} nodes over all files of this run (aliases and merge keys expanded); not read further`,
    );
    expect(errors[0]?.file).toBe(`f${Math.floor(RUN_NODE_BUDGET / 181_000)}.yaml`);
    expect(r.caches.length).toBeLessThan(files);
    clean(r.diagnostics);
  });
});
