import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DockerConfigError, loadRegistryCredentials } from '../../src/registry/docker-config.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

async function configDir(config: unknown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'prewarm-docker-'));
  await writeFile(join(dir, 'config.json'), typeof config === 'string' ? config : JSON.stringify(config));
  return dir;
}

/** A `docker-credential-<name>` on a private PATH that answers for `host` only. */
async function helper(name: string, host: string, user: string, secret: string): Promise<string> {
  const bin = await mkdtemp(join(tmpdir(), 'prewarm-helper-'));
  const script = join(bin, `docker-credential-${name}`);
  await writeFile(
    script,
    `#!/bin/sh\nread s\nif [ "$s" = "${host}" ]; then printf '{"ServerURL":"%s","Username":"${user}","Secret":"${secret}"}' "$s"; ` +
      `else echo "credentials not found in native keychain"; exit 1; fi\n`,
  );
  await chmod(script, 0o755);
  return `${bin}:${process.env['PATH']}`;
}

describe('loadRegistryCredentials', () => {
  it('reads auths as docker login writes them (auth base64, or username/password), keys with or without a scheme', async () => {
    const dir = await configDir({
      auths: { 'reg.example:5443': { auth: b64('u:p:with:colons') }, 'https://other.example/': { username: 'o', password: 'q' } },
    });
    const c = await loadRegistryCredentials(undefined, ['reg.example:5443'], { DOCKER_CONFIG: dir });
    expect(c).toMatchObject({ file: join(dir, 'config.json'), found: true });
    expect(c.keyring.lookup('reg.example:5443', 'team/app')).toEqual({ username: 'u', password: 'p:with:colons' });
    expect(c.keyring.lookup('other.example', 'x')).toEqual({ username: 'o', password: 'q' });
    expect(c.keyring.lookup('third.example', 'x')).toBeUndefined();
  });

  it('without a config at the default path is anonymous; a named one that is missing or not JSON is a DockerConfigError', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'prewarm-docker-'));
    const c = await loadRegistryCredentials(undefined, ['r.example'], { DOCKER_CONFIG: empty });
    expect(c).toMatchObject({ found: false, file: join(empty, 'config.json') });
    expect(c.keyring.size).toBe(0);
    await expect(loadRegistryCredentials(join(empty, 'nope.json'), [], {})).rejects.toBeInstanceOf(DockerConfigError);
    const bad = await configDir('{not json');
    const err = await loadRegistryCredentials(undefined, [], { DOCKER_CONFIG: bad }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DockerConfigError);
    expect((err as DockerConfigError).message).toMatch(/^docker config .*config\.json is not JSON/);
  });

  it('asks credHelpers for their host, credsStore for the others, and a helper wins over auths', async () => {
    const PATH = await helper('fake', 'reg.example', 'from-helper', 's3cret');
    const dir = await configDir({
      credHelpers: { 'reg.example': 'fake' },
      auths: { 'reg.example': { auth: b64('from-file:x') }, 'plain.example': { auth: b64('file-only:y') } },
    });
    const c = await loadRegistryCredentials(undefined, ['reg.example', 'plain.example'], { DOCKER_CONFIG: dir, PATH });
    expect(c.keyring.lookup('reg.example', 'a')).toEqual({ username: 'from-helper', password: 's3cret' });
    expect(c.keyring.lookup('plain.example', 'a')).toEqual({ username: 'file-only', password: 'y' });

    // Docker Hub is asked for under docker's own server name.
    const hubPath = await helper('hub', 'https://index.docker.io/v1/', 'hubuser', 'hubpass');
    const store = await configDir({ credsStore: 'hub', auths: { 'https://index.docker.io/v1/': {} } });
    const hub = await loadRegistryCredentials(undefined, ['docker.io', 'ghcr.io'], { DOCKER_CONFIG: store, PATH: hubPath });
    expect(hub.keyring.lookup('docker.io', 'library/redis')).toEqual({ username: 'hubuser', password: 'hubpass' });
    expect(hub.keyring.lookup('ghcr.io', 'a/b')).toBeUndefined();
  });

  it('names a helper that is not installed', async () => {
    const dir = await configDir({ credsStore: 'absent-for-test' });
    await expect(loadRegistryCredentials(undefined, ['r.example'], { DOCKER_CONFIG: dir, PATH: '/nonexistent' })).rejects.toThrow(
      'credential helper for r.example: docker-credential-absent-for-test is not on PATH',
    );
  });
});
