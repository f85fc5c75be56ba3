/**
 * Pure helpers of the OCI distribution client: image references, `WWW-Authenticate` challenges,
 * and credentials from mounted `kubernetes.io/dockerconfigjson` Secrets.
 */

import { parseImageRef as parseReference } from '../imagecache/reference.js';

/** Docker Hub's names: how users write it, and where its registry API lives. */
export const DOCKER_HUB = 'docker.io';
export const DOCKER_HUB_API = 'registry-1.docker.io';

/** A parsed image reference. */
export interface ImageRef {
  /** Registry host[:port] as written (docker.io for Docker Hub). */
  readonly registry: string;
  readonly repository: string;
  readonly tag?: string;
  readonly digest?: string;
}

/**
 * The registry, repository and tag-or-digest of a reference, by the one parser synthesis uses
 * (src/imagecache/reference.ts), so the sidecar resolves exactly the names synth emitted. A digest wins
 * over a tag: it is what the registry is asked for. Registry hosts are addressed in lowercase, so a
 * capitalised first component is refused here rather than taken for a host.
 */
export function parseImageRef(ref: string): ImageRef {
  const parsed = parseReference(ref);
  if (!parsed.ok || parsed.ref.domain !== parsed.ref.domain.toLowerCase()) throw new Error(`invalid image reference "${ref}"`);
  const { domain, path, tag, digest } = parsed.ref;
  return { registry: domain, repository: path, ...(digest !== undefined ? { digest } : { tag: tag ?? 'latest' }) };
}

/** The host the registry API is served on. */
export function apiHost(registry: string): string {
  return registry === DOCKER_HUB || registry === 'index.docker.io' ? DOCKER_HUB_API : registry;
}

/** A parsed `WWW-Authenticate` header. */
export interface Challenge {
  readonly scheme: string;
  readonly params: Readonly<Record<string, string>>;
}

/** Parses `Bearer realm="…",service="…",scope="…"` (RFC 7235 auth-params, quoted or token). */
export function parseChallenge(header: string): Challenge | undefined {
  const m = /^\s*([A-Za-z]+)\s*(.*)$/.exec(header);
  if (!m) return undefined;
  const params: Record<string, string> = {};
  const re = /([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g;
  let p: RegExpExecArray | null;
  while ((p = re.exec(m[2] ?? '')) !== null) params[(p[1] as string).toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] as string);
  return { scheme: (m[1] as string).toLowerCase(), params };
}

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

/** Normalizes a docker config key: no scheme, no trailing slash, Hub aliases folded. */
function normalizeKey(k: string): string {
  let s = k.replace(/^[a-z]+:\/\//i, '').replace(/\/+$/, '');
  if (s === 'index.docker.io/v1' || s === 'index.docker.io' || s === 'registry-1.docker.io') s = DOCKER_HUB;
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
 * Credentials from the contents of mounted pull secrets (`.dockerconfigjson`, `{"auths":{…}}`, or
 * the legacy `.dockercfg`, a bare map). Like the kubelet, a key may name a host or a host with a
 * path prefix; the most specific matching key wins; secrets earlier in the list win ties.
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

  /** Adds one credential for a registry host (or host/path prefix), e.g. from a credential helper. */
  addCredential(key: string, cred: Credential): void {
    this.entries.push({ key: normalizeKey(key), cred });
  }

  /** The credential for `registry/repository`, if any. */
  lookup(registry: string, repository: string): Credential | undefined {
    const full = `${normalizeKey(registry)}/${repository}`;
    let best: { key: string; cred: Credential } | undefined;
    for (const e of this.entries) {
      const match = full === e.key || full.startsWith(`${e.key}/`);
      if (match && (!best || e.key.length > best.key.length)) best = e;
    }
    return best?.cred;
  }

  get size(): number {
    return this.entries.length;
  }
}

/** Accept header of the manifest HEAD: an index/list is what a multi-arch tag resolves to. */
export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');
