import { describe, expect, it } from 'vitest';
import { parseImageRef } from '../../src/oci/reference.js';

const SHA = 'a'.repeat(64);

describe('parseImageRef', () => {
  it.each([
    ['python', 'docker.io/library/python:latest', true],
    ['python:3.12-slim', 'docker.io/library/python:3.12-slim', false],
    ['docker.io/library/python:3.12', 'docker.io/library/python:3.12', false],
    ['vllm/vllm-openai:v0.5.0', 'docker.io/vllm/vllm-openai:v0.5.0', false],
    ['nvcr.io/nvidia/pytorch:24.05-py3', 'nvcr.io/nvidia/pytorch:24.05-py3', false],
    ['localhost:5000/app', 'localhost:5000/app:latest', true],
    ['127.0.0.1:5000/team/app:1', '127.0.0.1:5000/team/app:1', false],
    [`redis@sha256:${SHA}`, `docker.io/library/redis@sha256:${SHA}`, false],
    [`redis:7@sha256:${SHA}`, `docker.io/library/redis:7@sha256:${SHA}`, false],
    ['[::1]:5000/app:v1', '[::1]:5000/app:v1', false],
    ['ghcr.io/a__b/c.d-e:x_y.z-1', 'ghcr.io/a__b/c.d-e:x_y.z-1', false],
    // Docker Hub's legacy name is Docker Hub (distribution/reference normalize.go)...
    ['index.docker.io/library/python:3.12', 'docker.io/library/python:3.12', false],
    ['index.docker.io/python:3.12', 'docker.io/library/python:3.12', false],
    ['index.docker.io/vllm/vllm-openai', 'docker.io/vllm/vllm-openai:latest', true],
    // ...while its registry host is another name to containerd, and stays one.
    ['registry-1.docker.io/library/python:3.12', 'registry-1.docker.io/library/python:3.12', false],
    ['index.docker.io:443/python:3.12', 'index.docker.io:443/python:3.12', false],
    [`redis@sha384:${'b'.repeat(96)}`, `docker.io/library/redis@sha384:${'b'.repeat(96)}`, false],
    [`redis@sha512:${'c'.repeat(128)}`, `docker.io/library/redis@sha512:${'c'.repeat(128)}`, false],
  ])('normalises %s', (input, canonical, defaulted) => {
    const r = parseImageRef(input);
    expect(r).toMatchObject({ ok: true, ref: { canonical, defaultedTag: defaulted } });
  });

  it.each([
    ['', 'image reference is empty'],
    ['Redis:6', 'repository name "Redis" must be lowercase'],
    ['docker.io/Library/redis:6', 'repository name "Library/redis" must be lowercase'],
    ['redis:', 'tag is empty in "redis:"'],
    ['redis@sha256:abc', 'digest "sha256:abc" is invalid: sha256 needs 64 lowercase hex characters, got 3'],
    ['redis@sha256', 'digest "sha256" must have the form algorithm:hex'],
    ['redis:-bad', 'tag "-bad" is invalid: it must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}'],
    ['a//b', 'repository path "a//b" has an empty component'],
    ['a/-b', 'repository path component "-b" is invalid: use lowercase letters, digits and single separators (. _ __ -)'],
    [' redis', 'image reference has leading or trailing white space'],
    ['host:port/app', 'registry port "port" is not a number'],
    [':tag', 'repository name is empty in ":tag"'],
    // Only the algorithms containerd accepts, each with its exact lowercase hex length.
    [`redis@md5:${'a'.repeat(32)}`, 'digest algorithm "md5" is not supported: containerd accepts sha256, sha384, sha512'],
    [`redis@sha1:${'a'.repeat(40)}`, 'digest algorithm "sha1" is not supported: containerd accepts sha256, sha384, sha512'],
    [`redis@SHA256:${SHA}`, 'digest algorithm "SHA256" is not supported: containerd accepts sha256, sha384, sha512'],
    [`redis@constructor:${SHA}`, 'digest algorithm "constructor" is not supported: containerd accepts sha256, sha384, sha512'],
    [`redis@blake3:${SHA}`, 'digest algorithm "blake3" is not supported: containerd accepts sha256, sha384, sha512'],
    [`redis@sha256:${'A'.repeat(64)}`, `digest "sha256:${'A'.repeat(64)}" is invalid: sha256 needs 64 lowercase hex characters, got 64`],
    [`redis@sha512:${SHA}`, `digest "sha512:${SHA}" is invalid: sha512 needs 128 lowercase hex characters, got 64`],
    [`redis@sha384:${'g'.repeat(96)}`, `digest "sha384:${'g'.repeat(96)}" is invalid: sha384 needs 96 lowercase hex characters, got 96`],
  ])('rejects %j', (input, error) => {
    expect(parseImageRef(input)).toEqual({ ok: false, error });
  });

  describe('names that no registry or runtime takes (distribution/reference)', () => {
    const name = (n: number) => 'a'.repeat(n);
    it.each([
      // The limit is on the normalised name: `docker.io/library/` counts.
      ['a bare name that fits only as written', name(240), 258, false],
      ['a bare name at the limit once normalised', name(255 - 'docker.io/library/'.length), 255, true],
      ['a registry name at the limit', `ghcr.io/${name(255 - 'ghcr.io/'.length)}:1`, 255, true],
      ['a registry name one over the limit', `ghcr.io/${name(256 - 'ghcr.io/'.length)}:1`, 256, false],
      ['a Docker Hub path one over the limit', `team/${name(256 - 'docker.io/team/'.length)}`, 256, false],
      // `index.docker.io` normalises to the shorter `docker.io`: a name over 255 as written may fit.
      ['a legacy Docker Hub name that fits once normalised', `index.docker.io/team/${name(240)}`, 255, true],
      ['a name far over the limit', `ghcr.io/${name(100_000)}:1`, 100_008, false],
    ])('%s (%i characters once normalised)', (_what, input, length, ok) => {
      const r = parseImageRef(input);
      if (ok) {
        expect(r.ok && r.ref.domain.length + 1 + r.ref.path.length).toBe(length);
        return;
      }
      expect(r.ok).toBe(false);
      expect(!r.ok && r.error).toMatch(
        new RegExp(
          `^repository name is ${length} characters long.*, over the limit of 255 that registries and container runtimes enforce$`,
        ),
      );
    });

    it('refuses a name of 64 hex digits, which reads as an image ID; a tag or a registry makes it a name', () => {
      expect(parseImageRef(SHA)).toEqual({
        ok: false,
        error:
          'a name of 64 hex digits reads as an image ID, which the kubelet and containerd refuse to pull by name: add a tag or a registry',
      });
      expect(parseImageRef('0123456789abcdef'.repeat(4))).toMatchObject({ ok: false });
      expect(parseImageRef(`${SHA}:1`)).toMatchObject({ ok: true, ref: { canonical: `docker.io/library/${SHA}:1` } });
      expect(parseImageRef(`ghcr.io/${SHA}`)).toMatchObject({ ok: true });
      expect(parseImageRef('a'.repeat(63))).toMatchObject({ ok: true });
      expect(parseImageRef('g'.repeat(64))).toMatchObject({ ok: true });
    });
  });

  it('treats an uppercase first component as a registry host, as Docker does', () => {
    expect(parseImageRef('Example.com/app:1')).toMatchObject({ ok: true, ref: { domain: 'Example.com', path: 'app' } });
  });

  it('tells a port from a tag', () => {
    expect(parseImageRef('registry:5000/app')).toMatchObject({ ok: true, ref: { domain: 'registry:5000', path: 'app', tag: 'latest' } });
  });
});
