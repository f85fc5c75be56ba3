import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DockerConfigError, jsonSyntaxError, loadRegistryCredentials } from '../../src/oci/docker-config.js';

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
    const c = await loadRegistryCredentials(undefined, { DOCKER_CONFIG: dir });
    expect(c).toMatchObject({ file: join(dir, 'config.json'), found: true });
    expect(c.keyring.lookup('reg.example:5443', 'team/app')).toEqual({ username: 'u', password: 'p:with:colons' });
    expect(c.keyring.lookup('other.example', 'x')).toEqual({ username: 'o', password: 'q' });
    expect(c.keyring.lookup('third.example', 'x')).toBeUndefined();
  });

  it('without a config at the default path is anonymous; a named one that is missing or not JSON is a DockerConfigError', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'prewarm-docker-'));
    const c = await loadRegistryCredentials(undefined, { DOCKER_CONFIG: empty });
    expect(c).toMatchObject({ found: false, file: join(empty, 'config.json') });
    expect(c.keyring.size).toBe(0);
    await expect(loadRegistryCredentials(join(empty, 'nope.json'), {})).rejects.toBeInstanceOf(DockerConfigError);
    const bad = await configDir('{not json');
    const err = await loadRegistryCredentials(undefined, { DOCKER_CONFIG: bad }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DockerConfigError);
    expect((err as DockerConfigError).message).toBe(
      `docker config ${join(bad, 'config.json')}:1:2: not valid JSON: expected a field name in double quotes`,
    );
  });

  it('asks credHelpers for their host, credsStore for the others, and a helper wins over auths', async () => {
    const PATH = await helper('fake', 'reg.example', 'from-helper', 's3cret');
    const dir = await configDir({
      credHelpers: { 'reg.example': 'fake' },
      auths: { 'reg.example': { auth: b64('from-file:x') }, 'plain.example': { auth: b64('file-only:y') } },
    });
    const c = await loadRegistryCredentials(undefined, { DOCKER_CONFIG: dir, PATH });
    // Helpers run lazily, per host: before its first request, the file's entry is all there is.
    expect(c.keyring.lookup('reg.example', 'a')).toEqual({ username: 'from-file', password: 'x' });
    await c.prepare('reg.example');
    await c.prepare('plain.example');
    expect(c.keyring.lookup('reg.example', 'a')).toEqual({ username: 'from-helper', password: 's3cret' });
    expect(c.keyring.lookup('plain.example', 'a')).toEqual({ username: 'file-only', password: 'y' });

    // Docker Hub is asked for under docker's own server name.
    const hubPath = await helper('hub', 'https://index.docker.io/v1/', 'hubuser', 'hubpass');
    const store = await configDir({ credsStore: 'hub', auths: { 'https://index.docker.io/v1/': {} } });
    const hub = await loadRegistryCredentials(undefined, { DOCKER_CONFIG: store, PATH: hubPath });
    await Promise.all([hub.prepare('docker.io'), hub.prepare('ghcr.io').catch(() => undefined)]);
    expect(hub.keyring.lookup('docker.io', 'library/redis')).toEqual({ username: 'hubuser', password: 'hubpass' });
    expect(hub.keyring.lookup('ghcr.io', 'a/b')).toBeUndefined();
  });

  it('names a helper that is not installed', async () => {
    const dir = await configDir({ credsStore: 'absent-for-test' });
    const c = await loadRegistryCredentials(undefined, { DOCKER_CONFIG: dir, PATH: '/nonexistent' });
    await expect(c.prepare('r.example')).rejects.toThrow(
      'credential helper for r.example: docker-credential-absent-for-test is not on PATH',
    );
  });

  const secret = b64('robot$ci:hunter2-s3cret');
  it.each<[string, string, string]>([
    ['a missing closing brace', `{"auths": {"r.example": {"auth": "${secret}"}}`, ':1:70: not valid JSON: the file ends inside an object'],
    ['an unquoted auth value', `{"auths": {"r.example": {"auth": ${secret}}}}`, ':1:34: not valid JSON: expected a value'],
    [
      'a trailing comma',
      `{\n  "auths": {\n    "r.example": {"auth": "${secret}",}\n  }\n}`,
      ':3:62: not valid JSON: expected a field name in double quotes',
    ],
    [
      'a line break inside the value',
      `{"auths": {"r.example": {"auth": "${secret.slice(0, 10)}\n${secret.slice(10)}"}}}`,
      ':1:45: not valid JSON: a control character',
    ],
    ['two values', `{"auth": "${secret}"} {"auth": "${secret}"}`, ':1:'],
  ])('names the file, line and problem of %s, never its content', async (_name, text, expected) => {
    const dir = await configDir(text);
    const err = (await loadRegistryCredentials(undefined, { DOCKER_CONFIG: dir }).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(DockerConfigError);
    expect(err.message).toContain(`docker config ${join(dir, 'config.json')}${expected}`);
    for (const piece of [secret.slice(0, 6), secret.slice(-6), 'hunter2']) expect(err.message).not.toContain(piece);
    await rm(dir, { recursive: true });
  });

  it('refuses /proc/self/environ, a FIFO, a folder and an oversized file without reading or quoting them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-docker-'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    await writeFile(join(dir, 'big.json'), `{"auths": {"r": {"auth": "${'A'.repeat(5 << 20)}"}}}`);
    const cases: [string, string][] = [
      ['/proc/self/environ', 'is not a plain file on disk'],
      [join(dir, 'fifo'), 'is a FIFO (named pipe), not a regular file'],
      [dir, 'is a folder, not a file'],
      [join(dir, 'big.json'), 'is 5.0 MiB (5242910 bytes), over the limit of 4.0 MiB (4194304 bytes) per docker config; not read'],
      [join(dir, 'nope.json'), 'does not exist'],
    ];
    for (const [file, why] of cases) {
      const err = (await loadRegistryCredentials(file, { PATH: process.env['PATH'] ?? '' }).catch((e: unknown) => e)) as Error;
      expect(err).toBeInstanceOf(DockerConfigError);
      expect(err.message).toContain(`cannot read docker config ${file}: it ${why}`);
      expect(err.message).not.toContain('PATH=');
      expect(err.message.length).toBeLessThan(300);
    }
    await rm(dir, { recursive: true });
  }, 30_000);

  it('reads an empty file as no configuration, as docker does', async () => {
    const dir = await configDir('\n');
    const c = await loadRegistryCredentials(undefined, { DOCKER_CONFIG: dir });
    expect(c).toMatchObject({ found: true });
    expect(c.keyring.size).toBe(0);
  });

  it('refuses JSON that is not an object', async () => {
    const dir = await configDir('null');
    await expect(loadRegistryCredentials(undefined, { DOCKER_CONFIG: dir })).rejects.toThrow(
      `docker config ${join(dir, 'config.json')}:1:1: not a docker config: expected a JSON object`,
    );
  });
});

describe('jsonSyntaxError', () => {
  it.each<[string, string]>([
    ['', '1:1: the file ends where a value should be'],
    ['{"a": 1', '1:8: the file ends inside an object'],
    ['[1, 2', '1:6: the file ends inside a list'],
    ['{"a": "b\\q"}', '1:9: invalid escape sequence in a string'],
    ['{"a": "b', '1:9: a string is not closed'],
    ['[1 2]', "1:4: expected ',' or ']' after an item"],
    ['{"a" 1}', "1:6: expected ':' after a field name"],
    ['\n\n  nul', '3:3: expected a value (a string in double quotes, a number, an object or a list)'],
    ['['.repeat(600), '1:513: nested too deeply'],
  ])('locates %j', (text, expected) => {
    expect(() => JSON.parse(text)).toThrow();
    const at = jsonSyntaxError(text);
    expect(`${at.line}:${at.column}: ${at.problem}`).toBe(expected);
  });
});
