/** Registry credentials, looked up as the kubelet does: by host or host/path prefix, the most specific winning. */
import fs from 'node:fs';
import path from 'node:path';

/** Docker Hub as users write it in image references (and as the keyring keys it). */
export const DOCKER_HUB = 'docker.io';
/** The host Docker Hub's registry API is served on. */
export const DOCKER_HUB_API = 'registry-1.docker.io';
/** How docker spells Docker Hub to credential helpers and in `auths`. */
export const DOCKER_HUB_SERVER = 'https://index.docker.io/v1/';

/** Username and password for one registry. */
export interface Credential {
  readonly username: string;
  readonly password: string;
}

/** One entry of a docker config, keyed as written. */
interface AuthEntry {
  readonly auth?: string;
  readonly username?: string;
  readonly password?: string;
}

/** Normalizes a docker config key: no scheme, no trailing slash, the host in lowercase, Hub aliases folded. */
function normalizeKey(k: string): string {
  let s = k.replace(/^[a-z]+:\/\//i, '').replace(/\/+$/, '');
  const slash = s.indexOf('/');
  s = slash < 0 ? s.toLowerCase() : s.slice(0, slash).toLowerCase() + s.slice(slash);
  if (s === 'index.docker.io/v1' || s === 'index.docker.io' || s === DOCKER_HUB_API) s = DOCKER_HUB;
  return s;
}

function credentialOf(e: AuthEntry): Credential | undefined {
  if (e.username !== undefined && e.password !== undefined) return { username: e.username, password: e.password };
  if (e.auth) {
    const dec = Buffer.from(e.auth, 'base64').toString('utf8');
    const i = dec.indexOf(':');
    if (i > 0) return { username: dec.slice(0, i), password: dec.slice(i + 1) };
  }
  return undefined;
}

/**
 * Credentials from docker configs and mounted pull secrets; as in the kubelet, the most specific
 * matching host/path key wins, and earlier entries win ties.
 */
export class Keyring {
  private readonly entries: { key: string; cred: Credential }[] = [];

  /** Adds one file's contents; malformed files are ignored (the kubelet does the same). */
  add(text: string): void {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return;
    }
    const auths = (raw as { auths?: unknown })?.auths ?? raw;
    if (typeof auths !== 'object' || auths === null) return;
    for (const [k, v] of Object.entries(auths as Record<string, AuthEntry>)) {
      const cred = typeof v === 'object' && v !== null ? credentialOf(v) : undefined;
      if (cred) this.entries.push({ key: normalizeKey(k), cred });
    }
  }

  /** Adds one credential for a host (or host/path prefix); `first` makes it win ties with earlier ones. */
  addCredential(key: string, cred: Credential, first = false): void {
    const entry = { key: normalizeKey(key), cred };
    if (first) this.entries.unshift(entry);
    else this.entries.push(entry);
  }

  /** The credential for `registry/repository` (an image reference's domain and path), if any. */
  lookup(registry: string, repository: string): Credential | undefined {
    const full = `${normalizeKey(registry)}/${repository}`;
    let best: { key: string; cred: Credential } | undefined;
    for (const e of this.entries) {
      const match = full === e.key || full.startsWith(`${e.key}/`);
      if (match && (!best || e.key.length > best.key.length)) best = e;
    }
    return best?.cred;
  }

  /** Number of credentials held. */
  get size(): number {
    return this.entries.length;
  }
}

/** Loads every `<dir>/<secret>/.dockerconfigjson` (or `.dockercfg`) in sorted order; no directory, no credentials. */
export function loadKeyring(dir: string): Keyring {
  const k = new Keyring();
  let secrets: string[];
  try {
    secrets = fs.readdirSync(dir).sort();
  } catch {
    return k;
  }
  for (const s of secrets) {
    for (const f of ['.dockerconfigjson', '.dockercfg']) {
      try {
        k.add(fs.readFileSync(path.join(dir, s, f), 'utf8'));
      } catch {
        // this secret does not have this key
      }
    }
  }
  return k;
}
