/**
 * The {@link Registry} port over the OCI distribution API: `HEAD /v2/<repo>/manifests/<tag>` with
 * index/manifest-list Accept headers, answering the `Docker-Content-Digest` header. Handles the
 * anonymous, basic and bearer-token flows (distribution `token` spec), with credentials from the
 * pull secrets mounted into the sidecar (never from the API: RBAC grants no Secrets).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiError, type Registry } from '../ports.js';
import { apiHost, Keyring, MANIFEST_ACCEPT, parseChallenge, parseImageRef, type Credential } from '../oci.js';
import { request } from './http.js';

/** Options of {@link OciRegistry}. */
export interface OciRegistryOptions {
  readonly keyring: Keyring;
  /**
   * Registries spoken to over plain HTTP (host[:port]), like containerd's `plain-http` hosts.
   * Everything else is HTTPS, verified against the system CAs plus NODE_EXTRA_CA_CERTS.
   * @default none
   */
  readonly plainHttp?: ReadonlySet<string>;
  /** @default 15000 */
  readonly timeoutMs?: number;
  /**
   * The User-Agent of every request, so registry logs tell the sidecar from the CLI.
   * @default 'prewarm-reconciler'
   */
  readonly userAgent?: string;
}

const basic = (c: Credential): string => `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

/**
 * Registry digest client. Caches bearer tokens per scope until shortly before they expire, and
 * remembers which scopes asked for basic auth, so that after the first challenge every check is a
 * single HEAD (a registry behind htpasswd otherwise answers each bare HEAD with a 401 first).
 */
export class OciRegistry implements Registry {
  private readonly tokens = new Map<string, { token: string; until: number }>();
  private readonly basicScopes = new Set<string>();
  private readonly userAgent: string;
  constructor(private readonly o: OciRegistryOptions) {
    this.userAgent = o.userAgent ?? 'prewarm-reconciler';
  }

  private base(registry: string): string {
    const host = apiHost(registry);
    return `${this.o.plainHttp?.has(host) ? 'http' : 'https'}://${host}`;
  }

  async digest(image: string): Promise<string> {
    const ref = parseImageRef(image);
    if (ref.digest) return ref.digest;
    const url = new URL(`${this.base(ref.registry)}/v2/${ref.repository}/manifests/${ref.tag ?? 'latest'}`);
    const cred = this.o.keyring.lookup(ref.registry, ref.repository);
    const scopeKey = `${ref.registry}/${ref.repository}`;
    const cached = this.tokens.get(scopeKey);
    let auth = cached && cached.until > Date.now() ? `Bearer ${cached.token}` : cred && this.basicScopes.has(scopeKey) ? basic(cred) : undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await request({
        method: 'HEAD',
        url,
        headers: { accept: MANIFEST_ACCEPT, 'user-agent': this.userAgent, ...(auth ? { authorization: auth } : {}) },
        timeoutMs: this.o.timeoutMs ?? 15_000,
      });
      if (r.status === 200) {
        const d = r.headers['docker-content-digest'];
        if (typeof d !== 'string' || !d.startsWith('sha256:')) throw new ApiError(200, `${image}: registry sent no Docker-Content-Digest`);
        return d;
      }
      if (r.status !== 401 || attempt > 0) throw new ApiError(r.status, `HEAD ${url.host}${url.pathname}: ${r.status}`);
      const ch = parseChallenge(String(r.headers['www-authenticate'] ?? ''));
      if (ch?.scheme === 'basic') {
        if (!cred) throw new ApiError(401, `${image}: registry wants basic auth and no pull secret matches ${ref.registry}`);
        auth = basic(cred);
        this.basicScopes.add(scopeKey);
      } else if (ch?.scheme === 'bearer' && ch.params.realm) {
        const token = await this.fetchToken(ch.params, `repository:${ref.repository}:pull`, cred);
        this.tokens.set(scopeKey, { token: token.token, until: Date.now() + Math.max(0, token.expiresIn - 30) * 1000 });
        auth = `Bearer ${token.token}`;
      } else {
        throw new ApiError(401, `${image}: unsupported auth challenge "${String(r.headers['www-authenticate'] ?? '')}"`);
      }
    }
    throw new ApiError(401, `${image}: unauthorized`);
  }

  /** Distribution token flow: GET realm?service&scope, with basic auth when we have credentials. */
  private async fetchToken(params: Readonly<Record<string, string>>, fallbackScope: string, cred: Credential | undefined): Promise<{ token: string; expiresIn: number }> {
    const url = new URL(params.realm as string);
    if (params.service) url.searchParams.set('service', params.service);
    url.searchParams.set('scope', params.scope ?? fallbackScope);
    const r = await request({
      method: 'GET',
      url,
      headers: { accept: 'application/json', 'user-agent': this.userAgent, ...(cred ? { authorization: basic(cred) } : {}) },
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

/**
 * Loads every `<dir>/<secret>/.dockerconfigjson` (and legacy `.dockercfg`), in sorted order so
 * matching is deterministic. A missing directory means no credentials (anonymous pulls only).
 */
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
