/**
 * The OCI digest client against a tiny registry on 127.0.0.1 speaking the distribution API's
 * manifest HEAD with anonymous, basic and bearer-token auth.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OciRegistry, parseChallenge, registryHost, registryRef } from '../../src/oci/client.js';
import { Keyring } from '../../src/oci/keyring.js';
import { ApiError } from '../../src/http/api-error.js';

const D1 = `sha256:${'1'.repeat(64)}`;
const D2 = `sha256:${'2'.repeat(64)}`;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('registryRef', () => {
  it.each([
    ['nginx', { domain: 'docker.io', path: 'library/nginx', tag: 'latest' }],
    ['nginx:1.27', { domain: 'docker.io', path: 'library/nginx', tag: '1.27' }],
    ['team/app:v1', { domain: 'docker.io', path: 'team/app', tag: 'v1' }],
    ['127.0.0.1:5000/a/b:t', { domain: '127.0.0.1:5000', path: 'a/b', tag: 't' }],
    ['localhost/x', { domain: 'localhost', path: 'x', tag: 'latest' }],
    [`reg.io/a@${D1}`, { domain: 'reg.io', path: 'a', digest: D1 }],
  ])('%s', (ref, want) => {
    expect(registryRef(ref)).toMatchObject(want);
  });
  it('rejects garbage', () => {
    expect(() => registryRef('a b')).toThrow('invalid image reference "a b"');
  });
  it('takes a capitalised first component for a host, as the reference grammar and containerd do, reached in lowercase', () => {
    expect(registryRef('Registry.Example.com/team/app:1')).toMatchObject({ domain: 'Registry.Example.com', path: 'team/app' });
    expect(registryRef('UPPER/case')).toMatchObject({ domain: 'UPPER', path: 'case' });
    expect(registryHost('Registry.Example.com')).toBe('registry.example.com');
  });
});

describe('parseChallenge', () => {
  it('reads quoted and bare params', () => {
    expect(parseChallenge('Bearer realm="https://auth.example/token",service="reg",scope="repository:a:pull"')).toEqual({
      scheme: 'bearer',
      params: { realm: 'https://auth.example/token', service: 'reg', scope: 'repository:a:pull' },
    });
    expect(parseChallenge('Basic realm=x')).toEqual({ scheme: 'basic', params: { realm: 'x' } });
  });
});

describe('OciRegistry against a loopback registry', () => {
  let server: http.Server;
  let host: string;
  const seen: { method: string; url: string; auth?: string; accept?: string; agent?: string }[] = [];
  const tags: Record<string, string> = { 'open/app:v1': D1, 'basic/app:v1': D2, 'bearer/app:v1': D1 };

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
        ...(req.headers.accept ? { accept: req.headers.accept } : {}),
        ...(req.headers['user-agent'] ? { agent: req.headers['user-agent'] } : {}),
      });
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/token') {
        if (req.headers.authorization !== `Basic ${b64('tok:en')}`) return void res.writeHead(401).end();
        if (url.searchParams.get('scope') !== 'repository:bearer/app:pull' || url.searchParams.get('service') !== 'test-registry')
          return void res.writeHead(400).end();
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token: 'T0K', expires_in: 300 }));
      }
      const m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(url.pathname);
      if (!m || req.method !== 'HEAD') return void res.writeHead(404).end();
      const [, repo, tag] = m as unknown as [string, string, string];
      if (repo.startsWith('basic/') && req.headers.authorization !== `Basic ${b64('bob:secret')}`) {
        return void res.writeHead(401, { 'www-authenticate': 'Basic realm="test"' }).end();
      }
      if (repo.startsWith('bearer/') && req.headers.authorization !== 'Bearer T0K') {
        return void res
          .writeHead(401, {
            'www-authenticate': `Bearer realm="http://${host}/token",service="test-registry",scope="repository:${repo}:pull"`,
          })
          .end();
      }
      const d = tags[`${repo}:${tag}`];
      if (!d) return void res.writeHead(404).end();
      res.writeHead(200, { 'docker-content-digest': d, 'content-type': 'application/vnd.oci.image.index.v1+json' }).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const client = (): OciRegistry => {
    const k = new Keyring();
    k.add(JSON.stringify({ auths: { [`${host}/basic`]: { auth: b64('bob:secret') }, [`${host}/bearer`]: { auth: b64('tok:en') } } }));
    return new OciRegistry({ keyring: k, userAgent: 'prewarm-reconciler', plainHttp: new Set([host]) });
  };

  it('HEADs the manifest anonymously, asking for indexes and manifest lists first', async () => {
    expect(await client().digest(`${host}/open/app:v1`)).toBe(D1);
    const h = seen.at(-1);
    expect(h?.method).toBe('HEAD');
    expect(h?.accept?.split(', ')[0]).toBe('application/vnd.oci.image.index.v1+json');
    expect(h?.accept).toContain('application/vnd.docker.distribution.manifest.list.v2+json');
    expect(h?.agent).toBe('prewarm-reconciler');
  });

  it('names its caller in the User-Agent when told to (the CLI is not the sidecar)', async () => {
    const cli = new OciRegistry({ keyring: new Keyring(), userAgent: 'prewarm-cli/9.9.9', plainHttp: new Set([host]) });
    expect(await cli.digest(`${host}/open/app:v1`)).toBe(D1);
    expect(seen.at(-1)?.agent).toBe('prewarm-cli/9.9.9');
  });

  it('answers basic challenges with the pull secret, then sends it up front: one HEAD per later check', async () => {
    const c = client();
    let n = seen.length;
    expect(await c.digest(`${host}/basic/app:v1`)).toBe(D2);
    expect(seen.slice(n).map((s) => s.auth ?? 'none')).toEqual(['none', `Basic ${b64('bob:secret')}`]);
    n = seen.length;
    expect(await c.digest(`${host}/basic/app:v1`)).toBe(D2);
    expect(seen.slice(n).map((s) => s.auth ?? 'none')).toEqual([`Basic ${b64('bob:secret')}`]);
  });

  it('runs the bearer token flow and caches the token', async () => {
    const c = client();
    expect(await c.digest(`${host}/bearer/app:v1`)).toBe(D1);
    const n = seen.length;
    expect(await c.digest(`${host}/bearer/app:v1`)).toBe(D1);
    expect(seen.slice(n).map((s) => s.url)).toEqual(['/v2/bearer/app/manifests/v1']);
  });

  it('never contacts the registry for digest-pinned references', async () => {
    const n = seen.length;
    expect(await client().digest(`${host}/open/app@${D2}`)).toBe(D2);
    expect(seen.length).toBe(n);
  });

  it('fails with the status code on unknown tags and missing credentials', async () => {
    await expect(client().digest(`${host}/open/app:nope`)).rejects.toMatchObject({ code: 404 });
    const anon = new OciRegistry({ keyring: new Keyring(), userAgent: 'prewarm-reconciler', plainHttp: new Set([host]) });
    await expect(anon.digest(`${host}/basic/app:v1`)).rejects.toBeInstanceOf(ApiError);
    await expect(anon.digest(`${host}/basic/app:v1`)).rejects.toThrow('registry wants basic auth and no pull secret matches');
  });
});

describe('OciRegistry.compressedSize against a loopback registry', () => {
  const sha = (body: string): string => `sha256:${createHash('sha256').update(body).digest('hex')}`;
  const amd = JSON.stringify({ schemaVersion: 2, config: { size: 10 }, layers: [{ size: 1000 }, { size: 2000 }] });
  const liar = JSON.stringify({ schemaVersion: 2, config: { size: 10 }, layers: [{ size: -5 }] });
  const index = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      { digest: sha(amd), platform: { os: 'linux', architecture: 'amd64' } },
      { digest: `sha256:${'9'.repeat(64)}`, platform: { os: 'linux', architecture: 'arm64' } },
    ],
  });
  const bodies: Record<string, string> = {
    '/v2/multi/manifests/v1': index,
    [`/v2/multi/manifests/${sha(amd)}`]: amd,
    // The arm64 entry's digest answers with a manifest that does not hash to it.
    [`/v2/multi/manifests/sha256:${'9'.repeat(64)}`]: amd,
    '/v2/single/manifests/v1': amd,
    '/v2/liar/manifests/v1': liar,
  };
  let server: http.Server;
  let registry: OciRegistry;
  let host: string;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const body = bodies[req.url ?? ''];
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
      res.end(body ?? '{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    registry = new OciRegistry({ keyring: new Keyring(), userAgent: 'test', plainHttp: new Set([host]), timeoutMs: 5000 });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const linux = (architecture: string) => ({ os: 'linux', architecture });

  it("follows an index to the node's platform and adds config and layers", async () => {
    expect(await registry.compressedSize(`${host}/multi:v1`, linux('amd64'))).toBe(3010);
    expect(await registry.compressedSize(`${host}/single:v1`, linux('amd64'))).toBe(3010);
  });

  it('refuses a manifest that does not hash to its digest, sizes no image has, and a missing platform', async () => {
    await expect(registry.compressedSize(`${host}/multi:v1`, linux('arm64'))).rejects.toThrow('not trusted');
    await expect(registry.compressedSize(`${host}/liar:v1`, linux('amd64'))).rejects.toThrow('layer 1 has no believable size (-5)');
    await expect(registry.compressedSize(`${host}/multi:v1`, linux('s390x'))).rejects.toThrow('no manifest for linux/s390x');
    await expect(registry.compressedSize(`${host}/absent:v1`, linux('amd64'))).rejects.toMatchObject({ code: 404 });
  });
});
