import { describe, expect, it } from 'vitest';
import { parseImageRef } from '../../src/oci/reference.js';
import { lockKey, parseLock, renderLock, resolveSizes, type SizeEntry } from '../../src/imagecache/sizes.js';

const A = `sha256:${'a'.repeat(64)}`;
const B = `sha256:${'b'.repeat(64)}`;
const ref = (text: string) => {
  const r = parseImageRef(text);
  if (!r.ok) throw new Error(r.error);
  return r.ref;
};

describe('the lock file', () => {
  const entries: SizeEntry[] = [
    { image: 'registry.example/ml/vllm:0.6', digest: A, compressed: 6_000_000_000, uncompressed: 15_000_000_000 },
    { image: 'docker.io/library/python:3.12', digest: B, compressed: 52_428_800 },
  ];

  it('renders sorted, labelled entries that read back as they were', () => {
    const text = renderLock('linux/amd64', entries);
    expect(text).toContain(
      `images:\n  docker.io/library/python:3.12:\n    digest: ${B}\n    compressed: 52428800\n  registry.example/ml/vllm:0.6:`,
    );
    expect(renderLock('linux/amd64', [...entries].reverse())).toBe(text);
    const { lock, diagnostics } = parseLock(text, 'specs/prewarm.lock');
    expect(diagnostics).toEqual([]);
    expect(lock?.platform).toBe('linux/amd64');
    expect([...(lock?.entries.values() ?? [])].map(({ location: _, ...e }) => e)).toEqual([...entries].reverse());
  });

  it('refuses what pin never writes, with line and field path', () => {
    const bad = (text: string) => parseLock(text, 'l').diagnostics.map((d) => `${d.line} ${d.path}: ${d.message}`);
    expect(bad('version: 2\nplatform: linux/amd64\n')).toEqual([
      '1 version: version must be 1; this prewarm reads no other (run prewarm pin to write it again)',
    ]);
    expect(bad('version: 1\nplatform: linux\n')[0]).toContain('is not os/arch');
    expect(bad(`version: 1\nplatform: linux/amd64\nimages:\n  a/b:1@${A}: {digest: ${A}, compressed: 1}\n`)[0]).toContain(
      'without its digest',
    );
    expect(bad(`version: 1\nplatform: linux/amd64\nimages:\n  a/b:1: {digest: ${A}, compressed: 1.5}\n`)[0]).toContain(
      'compressed: must be a whole number',
    );
    expect(bad(`version: 1\nplatform: linux/amd64\nimages:\n  a/b:1: {digest: ${A}, compressed: 1, size: 2}\n`)[0]).toContain(
      'unknown field',
    );
    expect(bad('[1]\n')[0]).toContain('must be a mapping');
    expect(bad('version: 1\n---\nversion: 1\n')[0]).toContain('exactly one YAML document');
    expect(
      bad(
        `version: 1\nplatform: linux/amd64\nimages:\n  docker.io/library/x:1: {digest: ${A}, compressed: 1}\n  x:1: {digest: ${A}, compressed: 1}\n`,
      )[0],
    ).toContain('is listed twice');
  });

  it('keys an image by its canonical tag, without the digest', () => {
    expect(lockKey(ref(`python:3.12@${A}`))).toBe('docker.io/library/python:3.12');
  });
});

describe('resolveSizes', () => {
  const lock = parseLock(renderLock('linux/amd64', [{ image: 'docker.io/library/python:3.12', digest: A, compressed: 7 }]), 'l').lock;
  it('uses an entry only at the digest the spec pins: a moved digest is stale, a tag without digest unusable', () => {
    if (lock === undefined) throw new Error('lock');
    const r = resolveSizes([ref(`python:3.12@${A}`), ref(`python:3.12@${B}`), ref('python:3.12'), ref(`python:3.13@${A}`)], [lock]);
    expect([...r.bytes]).toEqual([[`docker.io/library/python:3.12@${A}`, 7]]);
    expect(Object.fromEntries(r.unusable)).toEqual({
      [`docker.io/library/python:3.12@${B}`]: { problem: 'stale', measuredAt: A },
      'docker.io/library/python:3.12': { problem: 'unpinned' },
      [`docker.io/library/python:3.13@${A}`]: { problem: 'missing' },
    });
  });
  it('treats two lock files that disagree on an image as having no size for it', () => {
    const other = parseLock(renderLock('linux/amd64', [{ image: 'docker.io/library/python:3.12', digest: A, compressed: 8 }]), 'm').lock;
    if (lock === undefined || other === undefined) throw new Error('lock');
    expect(resolveSizes([ref(`python:3.12@${A}`)], [lock, other]).bytes.size).toBe(0);
  });
});
