import { describe, expect, it } from 'vitest';
import { parseImageRef } from '../../src/imagecache/reference.js';

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
  ])('rejects %j', (input, error) => {
    expect(parseImageRef(input)).toEqual({ ok: false, error });
  });

  it('treats an uppercase first component as a registry host, as Docker does', () => {
    expect(parseImageRef('Example.com/app:1')).toMatchObject({ ok: true, ref: { domain: 'Example.com', path: 'app' } });
  });

  it('tells a port from a tag', () => {
    expect(parseImageRef('registry:5000/app')).toMatchObject({ ok: true, ref: { domain: 'registry:5000', path: 'app', tag: 'latest' } });
  });
});
