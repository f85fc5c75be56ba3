/**
 * The OCI distribution client that `prewarm pin` and the sidecar share: what a tag points to now,
 * by `HEAD /v2/<repo>/manifests/<tag>` with index/manifest-list Accept headers, answering the
 * `Docker-Content-Digest` header. Handles the anonymous, basic and bearer-token flows
 * (distribution `token` spec), with credentials from a {@link Keyring}.
 *
 * The sidecar imports this file, so it stays on node built-ins and the sidecar's own HTTP client
 * (reconciler/adapters/http.ts explains the memory budget behind that).
 */
import { ApiError, type Registry } from '../reconciler/ports.js';
import { request } from '../reconciler/adapters/http.js';
import { parseImageRef, type ImageRef } from '../imagecache/reference.js';
import { DOCKER_HUB, DOCKER_HUB_API, type Credential, type Keyring } from './keyring.js';

/**
 * Parses a reference to resolve, by the one parser synthesis uses (src/imagecache/reference.ts),
 * so the registry is asked exactly for the names synth emitted. Registry hosts are addressed in
 * lowercase, so a capitalised first component is refused here rather than taken for a host.
 * Throws on an invalid reference.
 */
export function registryRef(image: string): ImageRef {
  const parsed = parseImageRef(image);
  if (!parsed.ok || parsed.ref.domain !== parsed.ref.domain.toLowerCase()) throw new Error(`invalid image reference "${image}"`);
  return parsed.ref;
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
  while ((p = re.exec(m[2] ?? '')) !== null)
    params[(p[1] as string).toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] as string);
  return { scheme: (m[1] as string).toLowerCase(), params };
}

/**
 * Accept header of the manifest HEAD: an index/list first, since that is what a multi-arch tag
 * resolves to, and its digest is the one a pinned reference must name.
 */
export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/** Options of {@link OciRegistry}. */
export interface OciRegistryOptions {
  readonly keyring: Keyring;
  /**
   * The User-Agent of every request, so registry logs tell the sidecar from the CLI
   * (`prewarm-reconciler`, `prewarm-cli/<version>`).
   */
  readonly userAgent: string;
  /**
   * Registries spoken to over plain HTTP (host[:port]), like containerd's `plain-http` hosts.
   * Everything else is HTTPS, verified against the system CAs plus NODE_EXTRA_CA_CERTS.
   * @default none
   */
  readonly plainHttp?: ReadonlySet<string>;
  /** @default 15000 */
  readonly timeoutMs?: number;
}

const basic = (c: Credential): string => `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

/**
 * Registry digest client. Caches bearer tokens per scope until shortly before they expire, and
 * remembers which scopes asked for basic auth, so that after the first challenge every check is a
 * single HEAD (a registry behind htpasswd otherwise answers each bare HEAD with a 401 first).
 * Failures reject with an {@link ApiError} carrying the HTTP status (0 for transport errors).
 */
export class OciRegistry implements Registry {
  private readonly tokens = new Map<string, { token: string; until: number }>();
  private readonly basicScopes = new Set<string>();
  constructor(private readonly o: OciRegistryOptions) {}

  private base(registry: string): string {
    const host = apiHost(registry);
    return `${this.o.plainHttp?.has(host) ? 'http' : 'https'}://${host}`;
  }

  /** The digest `image` resolves to now; a digest-pinned reference answers its own digest. */
  async digest(image: string): Promise<string> {
    const ref = registryRef(image);
    if (ref.digest) return ref.digest;
    const url = new URL(`${this.base(ref.domain)}/v2/${ref.path}/manifests/${ref.tag ?? 'latest'}`);
    const cred = this.o.keyring.lookup(ref.domain, ref.path);
    const scopeKey = `${ref.domain}/${ref.path}`;
    const cached = this.tokens.get(scopeKey);
    let auth =
      cached && cached.until > Date.now() ? `Bearer ${cached.token}` : cred && this.basicScopes.has(scopeKey) ? basic(cred) : undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await request({
        method: 'HEAD',
        url,
        headers: { accept: MANIFEST_ACCEPT, 'user-agent': this.o.userAgent, ...(auth ? { authorization: auth } : {}) },
        timeoutMs: this.o.timeoutMs ?? 15_000,
      });
      if (r.status === 200) {
        const d = r.headers['docker-content-digest'];
        if (typeof d !== 'string' || !d.startsWith('sha256:')) throw new ApiError(200, `${image}: registry sent no Docker-Content-Digest`);
        return d;
      }
      if (r.status !== 401 || attempt > 0) throw new ApiError(r.status, `HEAD ${url.host}${url.pathname}: ${r.status}`);
      const ch = parseChallenge(r.headers['www-authenticate'] ?? '');
      if (ch?.scheme === 'basic') {
        if (!cred) throw new ApiError(401, `${image}: registry wants basic auth and no pull secret matches ${ref.domain}`);
        auth = basic(cred);
        this.basicScopes.add(scopeKey);
      } else if (ch?.scheme === 'bearer' && ch.params.realm) {
        const token = await this.fetchToken(ch.params, `repository:${ref.path}:pull`, cred);
        this.tokens.set(scopeKey, { token: token.token, until: Date.now() + Math.max(0, token.expiresIn - 30) * 1000 });
        auth = `Bearer ${token.token}`;
      } else {
        throw new ApiError(401, `${image}: unsupported auth challenge "${r.headers['www-authenticate'] ?? ''}"`);
      }
    }
    throw new ApiError(401, `${image}: unauthorized`);
  }

  /** Distribution token flow: GET realm?service&scope, with basic auth when we have credentials. */
  private async fetchToken(
    params: Readonly<Record<string, string>>,
    fallbackScope: string,
    cred: Credential | undefined,
  ): Promise<{ token: string; expiresIn: number }> {
    const url = new URL(params.realm as string);
    if (params.service) url.searchParams.set('service', params.service);
    url.searchParams.set('scope', params.scope ?? fallbackScope);
    const r = await request({
      method: 'GET',
      url,
      headers: { accept: 'application/json', 'user-agent': this.o.userAgent, ...(cred ? { authorization: basic(cred) } : {}) },
      timeoutMs: this.o.timeoutMs ?? 15_000,
      maxBody: 64 << 10,
    });
    if (r.status !== 200) throw new ApiError(r.status, `token ${url.host}${url.pathname}: ${r.status}`);
    const body = JSON.parse(r.body.toString('utf8')) as { token?: string; access_token?: string; expires_in?: number };
    const token = body.token ?? body.access_token;
    if (!token) throw new ApiError(r.status, `token ${url.host}: no token in response`);
    return { token, expiresIn: body.expires_in ?? 60 };
  }
}
