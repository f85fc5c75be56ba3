/**
 * docs/spec.md is what the generator writes from the field shapes, so the reference cannot drift
 * from the fields the reader accepts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { specReference } from '../../src/imagecache/spec-reference.js';

const committed = readFileSync(new URL('../../docs/spec.md', import.meta.url), 'utf8');

describe('the spec reference', () => {
  it('is committed as the generator writes it (run `npm run docs:spec` after changing a field)', () => {
    expect(committed).toBe(specReference());
  });

  it('documents every field of both dialects, and which dialect accepts it', () => {
    const rows = specReference()
      .split('\n')
      .filter((l) => l.startsWith('| `'));
    const byPath = new Map(rows.map((r) => [/^\| `([^`]+)`/.exec(r)?.[1], r.split(' | ')]));
    expect(byPath.get('spec.cacheSpec[].images')?.slice(4, 6)).toEqual(['✓', '✓']);
    expect(byPath.get('spec.lanes')?.slice(2, 6)).toEqual(['`4`', '1 to 16', '—', '✓']);
    expect(byPath.get('spec.gate.deadline')?.slice(2, 4)).toEqual(['`10m`', '1s to 24h']);
    expect(byPath.get('spec.cacheSpec[].tolerations[].effect')?.[4]).toBe('—');
    for (const r of rows) expect(r.split(' | ').at(-1), r).not.toBe('— |');
  });
});
