/**
 * The user's registry credentials, found the way `docker pull` finds them: a docker config.json
 * (`--docker-config FILE`, else `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`) with
 * `auths` entries (`auth` = base64 `user:password`, as `docker login` writes without a store) and
 * credential helpers: `credHelpers` per registry host, then `credsStore` for every other host, run
 * as `docker-credential-<name> get` with the host on stdin. podman's and skopeo's auth.json
 * (`$REGISTRY_AUTH_FILE`) has the same `auths` format and can be passed as `--docker-config`.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DOCKER_HUB, DOCKER_HUB_API, DOCKER_HUB_SERVER, Keyring, type Credential } from './keyring.js';

/** A docker config that was named but cannot be read, or a credential helper that failed. */
export class DockerConfigError extends Error {
  override readonly name = 'DockerConfigError';
}

/** Credentials for the registries a command talks to, and where they came from (for messages). */
export interface RegistryCredentials {
  readonly keyring: Keyring;
  /** The docker config read, or the path looked for when there is none. */
  readonly file: string;
  readonly found: boolean;
}

/** The parts of config.json that name credentials. */
interface DockerConfig {
  readonly auths?: Record<string, unknown>;
  readonly credHelpers?: Record<string, string>;
  readonly credsStore?: string;
}

/** Helper answers longer than this are not a credential. */
const HELPER_TIMEOUT_MS = 30_000;

/**
 * Loads credentials for `registries` (hosts as written in image references; docker.io for Docker
 * Hub). Helpers run once per host, before any request. A helper's credential wins over an `auths`
 * entry for the same host, as in docker. No config file at the default path means anonymous access;
 * a named file that is missing, a file that is not JSON, or a failing helper rejects with a
 * {@link DockerConfigError} (the user's setup is wrong, not the registry).
 */
export async function loadRegistryCredentials(
  explicit: string | undefined,
  registries: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<RegistryCredentials> {
  const file = explicit ?? join(env['DOCKER_CONFIG'] ?? join(homedir(), '.docker'), 'config.json');
  const keyring = new Keyring();
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && explicit === undefined) return { keyring, file, found: false };
    throw new DockerConfigError(`cannot read docker config ${file}: ${(err as Error).message}`);
  }
  let config: DockerConfig;
  try {
    config = JSON.parse(text) as DockerConfig;
  } catch (err) {
    throw new DockerConfigError(`docker config ${file} is not JSON: ${(err as Error).message}`);
  }
  for (const registry of [...new Set(registries)].sort()) {
    const helper = helperFor(config, registry);
    if (helper === undefined) continue;
    const cred = await runHelper(helper, registry === DOCKER_HUB ? DOCKER_HUB_SERVER : registry, env);
    if (cred !== undefined) keyring.addCredential(registry, cred);
  }
  // After the helpers: the keyring's first entry wins a tie.
  keyring.add(text);
  return { keyring, file, found: true };
}

function helperFor(config: DockerConfig, registry: string): string | undefined {
  const aliases = registry === DOCKER_HUB ? [DOCKER_HUB, 'index.docker.io', DOCKER_HUB_SERVER, DOCKER_HUB_API] : [registry];
  for (const a of aliases) {
    const h = config.credHelpers?.[a];
    if (typeof h === 'string' && h !== '') return h;
  }
  return typeof config.credsStore === 'string' && config.credsStore !== '' ? config.credsStore : undefined;
}

/**
 * `docker-credential-<helper> get`: JSON `{ServerURL, Username, Secret}` on stdout, or exit 1 with
 * "credentials not found" (no credential: anonymous). Identity tokens (Username `<token>`) are
 * OAuth refresh tokens that only docker's own token exchange uses; they are skipped.
 */
function runHelper(helper: string, server: string, env: NodeJS.ProcessEnv): Promise<Credential | undefined> {
  const bin = `docker-credential-${helper}`;
  return new Promise((resolve, reject) => {
    const child = execFile(bin, ['get'], { env, timeout: HELPER_TIMEOUT_MS, maxBuffer: 1 << 20 }, (err, stdout) => {
      if (err) {
        if (/credentials not found/i.test(stdout)) return resolve(undefined);
        const why =
          (err as NodeJS.ErrnoException).code === 'ENOENT' ? `${bin} is not on PATH` : `${bin} get failed: ${stdout.trim() || err.message}`;
        return reject(new DockerConfigError(`credential helper for ${server}: ${why}`));
      }
      try {
        const out = JSON.parse(stdout) as { Username?: unknown; Secret?: unknown };
        if (typeof out.Username !== 'string' || typeof out.Secret !== 'string') throw new Error('no Username/Secret');
        resolve(out.Username === '<token>' ? undefined : { username: out.Username, password: out.Secret });
      } catch (e) {
        reject(new DockerConfigError(`credential helper for ${server}: ${bin} get printed no credential (${(e as Error).message})`));
      }
    });
    child.stdin?.end(server);
  });
}
