import { describe, expect, it } from 'vitest';
import { isDigest, parseImageID } from '../../src/contract/digest.js';

const SHA256 = `sha256:${'a'.repeat(64)}`;
const SHA512 = `sha512:${'b'.repeat(128)}`;

describe('isDigest', () => {
  it('accepts the algorithms containerd accepts, at their lengths', () => {
    expect(isDigest(SHA256)).toBe(true);
    expect(isDigest(SHA512)).toBe(true);
    expect(isDigest(`sha384:${'c'.repeat(96)}`)).toBe(true);
  });

  it('refuses other algorithms, lengths and cases', () => {
    expect(isDigest(`md5:${'a'.repeat(32)}`)).toBe(false);
    expect(isDigest(`sha256:${'a'.repeat(63)}`)).toBe(false);
    expect(isDigest(`sha256:${'A'.repeat(64)}`)).toBe(false);
    expect(isDigest('a'.repeat(64))).toBe(false);
    expect(isDigest(`:${'a'.repeat(64)}`)).toBe(false);
  });
});

describe('parseImageID', () => {
  it('reads a repo digest, with or without the docker-pullable scheme', () => {
    expect(parseImageID(`reg/a@${SHA256}`)).toEqual({ digest: SHA256, repoDigest: `reg/a@${SHA256}` });
    expect(parseImageID(`docker-pullable://reg:5000/a@${SHA512}`)).toEqual({ digest: SHA512, repoDigest: `reg:5000/a@${SHA512}` });
  });

  it("reads a bare id as a digest with no repo: the runtime's config id", () => {
    expect(parseImageID(SHA256)).toEqual({ digest: SHA256 });
  });

  it('reads nothing from an empty or digest-less id', () => {
    expect(parseImageID(undefined)).toBeUndefined();
    expect(parseImageID('')).toBeUndefined();
    expect(parseImageID('reg/a:1')).toBeUndefined();
    expect(parseImageID(`reg/a@md5:${'a'.repeat(32)}`)).toBeUndefined();
  });
});
