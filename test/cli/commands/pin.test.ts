/**
 * `prewarm pin` writing files, against a tiny registry on 127.0.0.1 that answers the manifest
 * HEAD of the distribution API (the real registries are in test/integration/cli/pin.test.ts).
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, lstat, mkdtemp, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { run } from '../../../src/cli/main.js';
import { startHostileServer, type HostileBehaviour } from '../../../harness/hostile-server.js';

const D = `sha256:${'c'.repeat(64)}`;
let server: Server;
let registry: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const known = req.method === 'HEAD' && req.url === '/v2/team/app/manifests/v1';
    res.writeHead(
      known ? 200 : 404,
      known ? { 'docker-content-digest': D, 'content-type': 'application/vnd.oci.image.index.v1+json' } : {},
    );
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  registry = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

async function pin(dir: string, at = registry, ...extra: string[]) {
  let stdout = '';
  let stderr = '';
  const config = join(await mkdtemp(join(tmpdir(), 'prewarm-pin-config-')), 'config.json');
  await writeFile(config, '{}\n');
  const started = Date.now();
  const code = await run(['pin', dir, '--plain-http', at, '--docker-config', config, ...extra], {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
  });
  return { code, stdout, stderr, ms: Date.now() - started };
}

/** A folder with one spec naming `images`. */
async function specWith(...images: string[]): Promise<{ dir: string; file: string; text: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'prewarm-pin-'));
  const text = `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec:\n  - images: [${images.join(', ')}]\n`;
  await writeFile(join(dir, 'a.yaml'), text);
  return { dir, file: join(dir, 'a.yaml'), text };
}

describe('prewarm pin, writing', () => {
  it('keeps Latin-1 bytes, CRLF and a BOM, and the mode; writes through a link', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-pin-'));
    const spec = (ref: string) =>
      Buffer.from(
        `\xef\xbb\xbf# caf\xe9 \xfcber\r\napiVersion: prewarm.dev/v1alpha1\r\nkind: ImageCache\r\nmetadata: {name: c, namespace: ns}   # \xa9\r\nspec:\r\n  cacheSpec:\r\n  - images: ["${ref}"]\r\n`,
        'latin1',
      );
    await writeFile(join(dir, 'store.txt'), spec(`${registry}/team/app:v1`));
    await chmod(join(dir, 'store.txt'), 0o600);
    await symlink('store.txt', join(dir, 'a.yaml'));
    const r = await pin(dir);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(r.stdout).toBe(`${join(dir, 'a.yaml')}:7:14: ${registry}/team/app:v1 -> ${registry}/team/app:v1@${D}\n`);
    expect((await readFile(join(dir, 'store.txt'))).equals(spec(`${registry}/team/app:v1@${D}`))).toBe(true);
    expect((await stat(join(dir, 'store.txt'))).mode & 0o777).toBe(0o600);
    expect((await lstat(join(dir, 'a.yaml'))).isSymbolicLink()).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['a.yaml', 'store.txt']);
  });

  it('resolves nothing and writes nothing when one image cannot be resolved', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-pin-'));
    const text = `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec:\n  - images: [${registry}/team/app:v1, ${registry}/team/gone:v1]\n`;
    await writeFile(join(dir, 'a.yaml'), text);
    const r = await pin(dir);
    expect(r.code, r.stderr).toBe(ExitCode.Unresolved);
    expect(r.stderr).toContain(
      `cannot pin ${registry}/team/gone:v1: ${registry} has no manifest team/gone:v1 (404: no such tag or repository)`,
    );
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe(text);
  });
});

describe('prewarm pin against registries that misbehave', () => {
  const A = `sha256:${'a'.repeat(64)}`;
  /** Pins one image of a fresh server behaving as `behaviour`; the server is stopped afterwards. */
  async function pinAgainst(behaviour: HostileBehaviour) {
    const server = await startHostileServer(behaviour);
    try {
      const spec = await specWith(`${server.host}/team/app:v1`);
      const r = await pin(spec.dir, server.host, '--request-timeout', '1s');
      return { ...r, ...spec, host: server.host, after: await readFile(spec.file, 'utf8') };
    } finally {
      await server.stop();
    }
  }

  it.each<[string, HostileBehaviour, string]>([
    ['a list smuggled into the header', { kind: 'digest', values: [`${A}, evil.example.com/miner:1`] }, 'several values'],
    ['the header sent twice', { kind: 'digest', values: [A, `sha256:${'b'.repeat(64)}`] }, 'several values'],
    ['a comment after the digest', { kind: 'digest', values: [`${A} #x`] }, 'not a sha256, sha384 or sha512 digest'],
    ['upper-case hex', { kind: 'digest', values: [`sha256:${'A'.repeat(64)}`] }, 'not a sha256, sha384 or sha512 digest'],
    ['a short digest', { kind: 'digest', values: ['sha256:abc'] }, 'not a sha256, sha384 or sha512 digest'],
    ['an unknown algorithm', { kind: 'digest', values: [`md5:${'a'.repeat(32)}`] }, 'not a sha256, sha384 or sha512 digest'],
    [
      'a header the manifest does not hash to',
      { kind: 'digest', values: [A], body: '{"not":"the manifest of that digest"}', headless: true },
      'but the manifest it sent hashes to sha256:',
    ],
  ])('refuses %s: exit 4 naming the registry, nothing written or printed on stdout', async (_, behaviour, why) => {
    const r = await pinAgainst(behaviour);
    expect(r.code, r.stderr).toBe(ExitCode.Unresolved);
    expect(r.stderr).toContain(`cannot pin ${r.host}/team/app:v1: ${r.host} sent Docker-Content-Digest`);
    expect(r.stderr).toContain(why);
    expect(r.stderr).not.toContain('\u001b');
    expect(r.stdout).toBe('');
    expect(r.after).toBe(r.text);
  });

  it('takes a sha512 digest, and hashes the manifest when a registry sends no header', async () => {
    const sha512 = `sha512:${'e'.repeat(128)}`;
    const long = await pinAgainst({ kind: 'digest', values: [sha512] });
    expect(long.code, long.stderr).toBe(ExitCode.Success);
    expect(long.after).toContain(`${long.host}/team/app:v1@${sha512}`);
    const body = '{"schemaVersion":2}';
    const bare = await pinAgainst({ kind: 'digest', values: [], body, headless: true });
    expect(bare.code, bare.stderr).toBe(ExitCode.Success);
    const { createHash } = await import('node:crypto');
    expect(bare.after).toContain(`@sha256:${createHash('sha256').update(body).digest('hex')}`);
  });

  it.each<[string, HostileBehaviour]>([
    ['truncated JSON', { kind: 'truncated-json', keep: 40 }],
    ['JSON without schemaVersion', { kind: 'digest', values: [], body: '{"kind":"List"}', headless: true }],
    ['a JSON list', { kind: 'digest', values: [], body: '[{"schemaVersion":2}]', headless: true }],
    ['an HTML page', { kind: 'digest', values: [], body: '<html>login</html>', headless: true }],
  ])('refuses to hash an answer that is not a manifest when no header was sent (%s): exit 4, nothing written', async (_, behaviour) => {
    const r = await pinAgainst(behaviour);
    expect(r.code, r.stderr).toBe(ExitCode.Unresolved);
    expect(r.stderr).toContain(
      `cannot pin ${r.host}/team/app:v1: ${r.host} sent no Docker-Content-Digest and an answer that is not a manifest (a JSON object with schemaVersion); not trusted`,
    );
    expect(r.stdout).toBe('');
    expect(r.after).toBe(r.text);
  });

  it.each<HostileBehaviour>([
    { kind: 'silent' },
    { kind: 'drip-head', everyMs: 100 },
    { kind: 'drip-body', everyMs: 100 },
    { kind: 'endless-body' },
    { kind: 'drip-token', everyMs: 100 },
    { kind: 'huge-error', status: 500, bytes: 300 << 10 },
  ])(
    'gives up on a registry that answers as $kind within --request-timeout: exit 4, one bounded line',
    async (behaviour) => {
      const r = await pinAgainst(behaviour);
      expect(r.code, r.stderr).toBe(ExitCode.Unresolved);
      expect(r.stderr).toContain(`cannot pin ${r.host}/team/app:v1: `);
      expect(r.stderr.length).toBeLessThan(2_000);
      // Two requests at most (HEAD, then GET or the token), each within 1s, and a wide margin.
      expect(r.ms).toBeLessThan(10_000);
      expect(r.after).toBe(r.text);
    },
    30_000,
  );
});

describe('prewarm pin, bounded per registry', () => {
  it('asks a registry that did not answer no more in this run: five images end within about one --request-timeout', async () => {
    const server = await startHostileServer({ kind: 'silent' });
    try {
      const images = ['a:1', 'b:1', 'c:1', 'd:1', 'e:1'].map((i) => `${server.host}/team/${i}`);
      const spec = await specWith(...images);
      const r = await pin(spec.dir, server.host, '--request-timeout', '2s');
      expect(r.code, r.stderr).toBe(ExitCode.Unresolved);
      // One deadline (2 s), not five in a row (10 s).
      expect(r.ms).toBeLessThan(6_000);
      expect(server.requests).toBe(1);
      for (const image of images) expect(r.stderr).toContain(`cannot pin ${image}: `);
      expect(r.stderr).toContain(`not tried: ${server.host} did not answer the request for ${images[0] ?? ''} earlier in this run`);
      expect(await readFile(spec.file, 'utf8')).toBe(spec.text);
    } finally {
      await server.stop();
    }
  }, 30_000);
});

describe('prewarm pin, bounded as a whole run', () => {
  /** `n` silent registries, each on its own loopback port: each accepts and never answers. */
  async function stalled(n: number) {
    const servers = await Promise.all(Array.from({ length: n }, () => startHostileServer({ kind: 'silent' })));
    return { servers, images: servers.map((s, i) => `${s.host}/team/app-${i}:1`), stop: () => Promise.all(servers.map((s) => s.stop())) };
  }

  it('asks 40 stalled registries in parallel: at --request-timeout 1s the run takes a few timeouts, not 40', async () => {
    const { servers, images, stop } = await stalled(40);
    try {
      const spec = await specWith(...images);
      const r = await pin(spec.dir, registry, '--request-timeout', '1s');
      expect(r.code, r.stderr).toBe(ExitCode.Unresolved);
      // Eight at a time: five rounds of one timeout each; one after another took 41 s.
      expect(r.ms).toBeLessThan(20_000);
      for (const s of servers) expect(s.requests).toBe(1);
      for (const image of images) expect(r.stderr).toContain(`cannot pin ${image}: `);
      expect(await readFile(spec.file, 'utf8')).toBe(spec.text);
    } finally {
      await stop();
    }
  }, 60_000);

  it('ends at --deadline, whatever each request may take: requests under way stop, the rest are reported as late', async () => {
    const { images, stop } = await stalled(40);
    try {
      const spec = await specWith(...images);
      const r = await pin(spec.dir, registry, '--request-timeout', '30s', '--deadline', '3s');
      expect(r.code, r.stderr).toBe(ExitCode.Unresolved);
      // At 30 s per request, eight at a time would take 150 s.
      expect(r.ms).toBeLessThan(15_000);
      for (const image of images)
        expect(r.stderr).toContain(`cannot pin ${image}: not resolved: the run's deadline (--deadline 3s) passed first`);
      expect(await readFile(spec.file, 'utf8')).toBe(spec.text);
    } finally {
      await stop();
    }
  }, 60_000);

  it('runs credential helpers lazily and within the deadline: 40 hosts behind a helper that never answers', async () => {
    const { images, stop } = await stalled(40);
    const bin = await mkdtemp(join(tmpdir(), 'prewarm-helper-'));
    // exec: the helper is the sleep itself, so that killing it closes its output.
    await writeFile(join(bin, 'docker-credential-stall'), '#!/bin/sh\nexec sleep 120\n', { mode: 0o755 });
    const config = join(bin, 'config.json');
    await writeFile(config, JSON.stringify({ credsStore: 'stall' }));
    const path = process.env['PATH'];
    process.env['PATH'] = `${bin}:${path ?? ''}`;
    try {
      const spec = await specWith(...images);
      let stderr = '';
      const started = Date.now();
      const code = await run(['pin', spec.dir, '--docker-config', config, '--deadline', '3s'], {
        stdout: () => undefined,
        stderr: (t) => (stderr += t),
      });
      expect(code, stderr).toBe(ExitCode.Unresolved);
      // Before, helpers ran one per host before any request, 30 s each: 20 minutes.
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(stderr).toContain("not resolved: the run's deadline (--deadline 3s) passed first");
    } finally {
      process.env['PATH'] = path;
      await stop();
    }
  }, 60_000);
});

describe('prewarm pin and validate agree on capitals', () => {
  it('pins a reference whose registry host has capitals (host names are case-insensitive), as validate accepts it', async () => {
    const D512 = `sha512:${'f'.repeat(128)}`;
    const server = await startHostileServer({ kind: 'digest', values: [D512] });
    try {
      const port = server.host.split(':')[1] ?? '';
      const ref = `LocalHost:${port}/team/app:v1`;
      const spec = await specWith(ref);
      const valid = await run(['validate', spec.dir], { stdout: () => undefined, stderr: () => undefined });
      expect(valid).toBe(ExitCode.Success);
      const r = await pin(spec.dir, `localhost:${port}`, '--request-timeout', '5s');
      expect(r.code, r.stderr).toBe(ExitCode.Success);
      expect(await readFile(spec.file, 'utf8')).toBe(spec.text.replace(ref, `${ref}@${D512}`));
      expect(server.requests).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  });

  it('refuses a repository path with capitals as validate does (exit 1), without a crash', async () => {
    const spec = await specWith('Registry.Example.com/Team/app:1');
    let err = '';
    const valid = await run(['validate', spec.dir], { stdout: () => undefined, stderr: (t) => (err += t) });
    expect(valid, err).toBe(ExitCode.InvalidInput);
    const r = await pin(spec.dir, 'registry.example.com');
    expect(r.code, r.stderr).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain('must be lowercase');
  });
});

describe('prewarm pin, recording sizes', () => {
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { size: 10 },
    layers: [
      { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', size: 1000 },
      { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', size: 2000 },
    ],
  });
  const digest = `sha256:${createHash('sha256').update(manifest).digest('hex')}`;
  let sizes: Server;
  let host: string;
  const asked: string[] = [];
  beforeAll(async () => {
    sizes = createServer((req, res) => {
      asked.push(`${req.method ?? ''} ${req.url ?? ''}`);
      const known = req.url === '/v2/team/ml/manifests/v1' || req.url === `/v2/team/ml/manifests/${digest}`;
      res.writeHead(
        known ? 200 : 404,
        known ? { 'docker-content-digest': digest, 'content-type': 'application/vnd.oci.image.manifest.v1+json' } : {},
      );
      res.end(known && req.method === 'GET' ? manifest : undefined);
    });
    await new Promise<void>((resolve) => sizes.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(sizes.address() as AddressInfo).port}`;
  });
  afterAll(async () => new Promise<void>((resolve) => sizes.close(() => resolve())));

  it('writes prewarm.lock with the compressed bytes at the pinned digest, keeps a fresh entry, and measures a moved one again', async () => {
    const spec = await specWith(`${host}/team/ml:v1`);
    const r = await pin(spec.dir, host);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    const lock = await readFile(join(spec.dir, 'prewarm.lock'), 'utf8');
    expect(lock).toContain(`platform: linux/amd64\nimages:\n  ${host}/team/ml:v1:\n    digest: ${digest}\n    compressed: 3010\n`);
    expect(lock).not.toMatch(/^ +uncompressed:/m);
    // Validate reads it: the pool splits by bytes, and no image lacks a size.
    let err = '';
    expect(await run(['validate', spec.dir], { stdout: () => undefined, stderr: (t) => (err += t) })).toBe(ExitCode.Success);
    expect(err).toContain(`sizes from ${join(spec.dir, 'prewarm.lock')}`);
    expect(err).not.toContain('hint:');
    // A second run asks the registry nothing: the spec is pinned and its size fresh.
    asked.length = 0;
    const again = await pin(spec.dir, host);
    expect(again.code, again.stderr).toBe(ExitCode.Success);
    expect(asked).toEqual([]);
    expect(await readFile(join(spec.dir, 'prewarm.lock'), 'utf8')).toBe(lock);
    // Renovate moves the digest in the spec, not in the lock: stale, a hint in validate, measured again by pin.
    const moved = `sha256:${'d'.repeat(64)}`;
    await writeFile(spec.file, (await readFile(spec.file, 'utf8')).replace(digest, moved));
    err = '';
    expect(await run(['validate', spec.dir], { stdout: () => undefined, stderr: (t) => (err += t) })).toBe(ExitCode.Success);
    expect(err).toContain(`hint: ${host}/team/ml:v1@${moved} (pool `);
    expect(err).toContain(`its size was measured at ${digest}, not the digest the spec pins`);
    const third = await pin(spec.dir, host);
    expect(third.code, third.stderr).toBe(ExitCode.Success);
    expect(third.stderr).toContain(`warning: no size recorded for ${host}/team/ml:v1@${moved}`);
  });

  it('refuses a malformed lock file in validate with its line, and leaves it alone in pin', async () => {
    const spec = await specWith(`${host}/team/ml:v1@${digest}`);
    await writeFile(
      join(spec.dir, 'prewarm.lock'),
      'version: 1\nplatform: linux/amd64\nimages:\n  x/y:1:\n    digest: nope\n    compressed: -1\n',
    );
    let err = '';
    expect(await run(['validate', spec.dir], { stdout: () => undefined, stderr: (t) => (err += t) })).toBe(ExitCode.InvalidInput);
    expect(err).toContain(`${join(spec.dir, 'prewarm.lock')}:5:13: error: document 1: images["x/y:1"].digest:`);
    expect(err).toContain('images["x/y:1"].compressed: must be a whole number of bytes');
    const r = await pin(spec.dir, host);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain('is not a lock file pin can update');
  });
});
