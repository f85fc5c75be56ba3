import { describe, expect, it } from 'vitest';
import {
  compressedBytes,
  imageBytes,
  isIndex,
  UNCOMPRESSED_SIZE_ANNOTATION,
  MAX_IMAGE_BYTES,
  parseManifest,
  platformDigest,
} from '../../src/oci/manifest.js';

const manifest = (sizes: unknown[], config: unknown = 100) => ({
  schemaVersion: 2,
  mediaType: 'application/vnd.oci.image.manifest.v1+json',
  config: { size: config },
  layers: sizes.map((size) => ({ size })),
});

describe('compressedBytes', () => {
  it('adds the config and the layers', () => {
    expect(compressedBytes(manifest([1000, 2000]))).toBe(3100);
    expect(compressedBytes(manifest([]))).toBe(100);
  });

  it('refuses sizes no image has: negative, fractional, text, past 1 PiB, and sums past it', () => {
    expect(() => compressedBytes(manifest([-1]))).toThrow('layer 1 has no believable size (-1)');
    expect(() => compressedBytes(manifest([1.5]))).toThrow('layer 1 has no believable size (1.5)');
    expect(() => compressedBytes(manifest(['9']))).toThrow('layer 1 has no believable size (string)');
    expect(() => compressedBytes(manifest([1], 2 ** 60))).toThrow('the config has no believable size');
    expect(() => compressedBytes(manifest([MAX_IMAGE_BYTES, MAX_IMAGE_BYTES]))).toThrow('the layers add up to more than');
  });

  it('refuses an index, and a manifest without config and layers (schema 1)', () => {
    expect(() => compressedBytes({ manifests: [] })).toThrow('an index, not an image manifest');
    expect(() => compressedBytes({ schemaVersion: 1, fsLayers: [] })).toThrow('schema 1 is not read');
  });
});

describe('imageBytes', () => {
  const layer = (size: number, extra: object = {}) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', size, ...extra });
  it('states the uncompressed size only where every layer tells it: a plain tar, or the eStargz annotation', () => {
    const m = (layers: object[]) => ({ schemaVersion: 2, config: { size: 10 }, layers });
    expect(imageBytes(m([layer(100), layer(200)]))).toEqual({ compressed: 310 });
    const told = m([
      { mediaType: 'application/vnd.oci.image.layer.v1.tar', size: 100 },
      layer(200, { annotations: { [UNCOMPRESSED_SIZE_ANNOTATION]: '900' } }),
    ]);
    expect(imageBytes(told)).toEqual({ compressed: 310, uncompressed: 1010 });
    const half = m([layer(100), layer(200, { annotations: { [UNCOMPRESSED_SIZE_ANNOTATION]: '900' } })]);
    expect(imageBytes(half)).toEqual({ compressed: 310 });
    expect(() => imageBytes(m([layer(1, { annotations: { [UNCOMPRESSED_SIZE_ANNOTATION]: '-3' } })]))).toThrow('no believable size');
  });
});

describe('platformDigest and parseManifest', () => {
  const index = {
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      { digest: 'sha256:arm', platform: { os: 'linux', architecture: 'arm64' } },
      { digest: 'sha256:amd', platform: { os: 'linux', architecture: 'amd64' } },
      'junk',
    ],
  };

  it("picks the node's OS and architecture", () => {
    expect(isIndex(index)).toBe(true);
    expect(platformDigest(index, { os: 'linux', architecture: 'amd64' })).toBe('sha256:amd');
    expect(() => platformDigest(index, { os: 'windows', architecture: 'amd64' })).toThrow('no manifest for windows/amd64');
  });

  it('parses only JSON objects', () => {
    expect(parseManifest(Buffer.from('{"schemaVersion":2}'))).toEqual({ schemaVersion: 2 });
    expect(() => parseManifest('[1]')).toThrow('not a JSON object');
    expect(() => parseManifest('<html>')).toThrow('not JSON');
  });
});
