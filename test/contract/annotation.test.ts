import { describe, expect, it } from 'vitest';
import { ANNOTATION_MAX_BYTES, parseAnnotation, renderAnnotation } from '../../src/contract/annotation.js';
import { digest } from '../reconciler/fixtures.js';

describe('renderAnnotation', () => {
  it('stays under the size cap for hundreds of images, counting what it omits', () => {
    const digests = Object.fromEntries(
      Array.from({ length: 300 }, (_, i) => [`registry.example/team/very/long/repository/name-${i}:v1.2.3`, digest('a')]),
    );
    const failing = Array.from({ length: 40 }, (_, i) => ({ image: `reg/f${i}:1`, reason: 'ErrImagePull', message: 'm'.repeat(200) }));
    const text = renderAnnotation({ v: 1, pod: 'p', state: 'partial', images: 340, present: 300, digests, failing });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(ANNOTATION_MAX_BYTES);
    const a = parseAnnotation(text);
    expect(a?.digestsOmitted).toBeGreaterThan(0);
    expect((a?.failing?.length ?? 0) + (a?.failingOmitted ?? 0)).toBe(40);
    expect(a?.failing?.length).toBeLessThanOrEqual(10);
  });

  it('is deterministic: equal content, equal text', () => {
    const a = renderAnnotation({ v: 1, pod: 'p', state: 'warm', images: 2, digests: { b: 'x', a: 'y' } });
    const b = renderAnnotation({ v: 1, pod: 'p', state: 'warm', images: 2, digests: { a: 'y', b: 'x' } });
    expect(a).toBe(b);
  });

  it('treats unreadable annotations as absent', () => {
    expect(parseAnnotation('{nope')).toBeUndefined();
    expect(parseAnnotation('{"v":99,"pod":"p"}')).toBeUndefined();
    expect(parseAnnotation(undefined)).toBeUndefined();
  });

  it('treats JSON of the wrong shape as absent, field by field, and never throws', () => {
    const ok = { v: 1, pod: 'p', state: 'warming', images: 2 };
    expect(parseAnnotation(JSON.stringify(ok))).toEqual(ok);
    const bad: unknown[] = [
      null,
      [],
      'warm',
      42,
      { ...ok, v: '1' },
      { ...ok, pod: 7 },
      { ...ok, state: 'cold' },
      { ...ok, images: '2' },
      { ...ok, present: 'all' },
      { ...ok, ttwSeconds: null },
      { ...ok, warmAt: 'yesterday' },
      { ...ok, warmAt: 5 },
      { ...ok, digests: ['sha256:x'] },
      { ...ok, digests: { 'reg/a:1': 1 } },
      { ...ok, failing: 'reg/a:1' },
      { ...ok, failing: [{ image: 'reg/a:1' }] },
      { ...ok, failing: [null] },
      { ...ok, failingOmitted: '3' },
    ];
    for (const b of bad) expect(parseAnnotation(JSON.stringify(b)), JSON.stringify(b)).toBeUndefined();
    expect(parseAnnotation('')).toBeUndefined();
  });
});
