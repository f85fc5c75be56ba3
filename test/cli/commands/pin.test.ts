/**
 * `prewarm pin` writing files, against a tiny registry on 127.0.0.1 that answers the manifest
 * HEAD of the distribution API (the real registries are in test/integration/cli/pin.test.ts).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, lstat, mkdtemp, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { run } from '../../../src/cli/main.js';

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

async function pin(dir: string) {
  let stdout = '';
  let stderr = '';
  const config = join(await mkdtemp(join(tmpdir(), 'prewarm-pin-config-')), 'config.json');
  await writeFile(config, '{}\n');
  const code = await run(['pin', dir, '--plain-http', registry, '--docker-config', config], {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
  });
  return { code, stdout, stderr };
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
