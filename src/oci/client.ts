/** The OCI distribution client `prewarm pin` and the sidecar share; node built-ins only (see src/http/client.ts). */
import { createHash } from 'node:crypto';
import { ApiError } from '../http/api-error.js';
import { request, type HttpResponse } from '../http/client.js';
import { quote } from '../text/quote.js';
import { checkDigest, parseImageRef, type ImageRef } from './reference.js';
import { DOCKER_HUB, DOCKER_HUB_API, type Credential, type Keyring } from './keyring.js';
import { imageBytes, isIndex, parseManifest, platformDigest, type ImageBytes, type Platform } from './manifest.js';

/** Parses a reference by synthesis's own parser, so the registry is asked for the names synth emitted. */
export function registryRef(image: string): ImageRef {
  const parsed = parseImageRef(image);
  if (!parsed.ok) throw new Error(`invalid image reference ${quote(image)}`);
  return parsed.ref;
}

/** The host a reference's domain is reached at, lowercased (RFC 4343). */
export function registryHost(domain: string): string {
  return domain.toLowerCase();
}

/** What one image's request came to. */
export type Asked<R> =
  | { readonly kind: 'answered'; readonly value: R }
  | { readonly kind: 'failed'; readonly error: unknown }
  /** Not asked: its registry did not answer `first`'s request earlier in this run. */
  | { readonly kind: 'skipped'; readonly host: string; readonly first: string }
  /** Not answered: the run's deadline came first. */
  | { readonly kind: 'deadline' };

/** Registries asked at once by {@link askRegistries}: enough to overlap stalls, few enough to be polite. */
export const REGISTRY_CONCURRENCY = 8;

/** The bounds of {@link askRegistries}. */
export interface AskBounds {
  /** The run's deadline: once aborted, nothing more is asked, and requests under way end. */
  readonly signal: AbortSignal;
  /** Runs before a host's first request (a credential helper); if it rejects, that host's images fail. */
  readonly prepare?: (host: string) => Promise<void>;
  /** @default REGISTRY_CONCURRENCY */
  readonly concurrency?: number;
}

/** Asks registries in parallel, each one's items in turn; one that did not answer is not asked again. Never rejects. */
export async function askRegistries<T, R>(
  items: readonly T[],
  imageOf: (item: T) => string,
  ask: (item: T) => Promise<R>,
  bounds: AskBounds,
): Promise<Asked<R>[]> {
  const byHost = new Map<string, number[]>();
  items.forEach((item, i) => {
    const host = registryHost(registryRef(imageOf(item)).domain);
    byHost.set(host, [...(byHost.get(host) ?? []), i]);
  });
  const out: Asked<R>[] = items.map(() => ({ kind: 'deadline' }));
  const queue = [...byHost];
  const worker = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const [host, indices] = next;
      await askHost(host, indices, items, imageOf, ask, bounds, out);
    }
  };
  await Promise.all(Array.from({ length: Math.min(bounds.concurrency ?? REGISTRY_CONCURRENCY, queue.length) }, worker));
  return out;
}

/** One registry's items of {@link askRegistries}, in turn, into `out`. */
async function askHost<T, R>(
  host: string,
  indices: readonly number[],
  items: readonly T[],
  imageOf: (item: T) => string,
  ask: (item: T) => Promise<R>,
  bounds: AskBounds,
  out: Asked<R>[],
): Promise<void> {
  if (bounds.signal.aborted) return;
  try {
    await bounds.prepare?.(host);
  } catch (error) {
    for (const i of indices) out[i] = bounds.signal.aborted ? { kind: 'deadline' } : { kind: 'failed', error };
    return;
  }
  let first: string | undefined;
  for (const i of indices) {
    if (bounds.signal.aborted) return;
    const item = items[i] as T;
    if (first !== undefined) {
      out[i] = { kind: 'skipped', host, first };
      continue;
    }
    try {
      out[i] = { kind: 'answered', value: await ask(item) };
    } catch (error) {
      if (bounds.signal.aborted) return;
      if (error instanceof ApiError && error.code === 0) first = imageOf(item);
      out[i] = { kind: 'failed', error };
    }
  }
}

/** The largest manifest read when a registry sends no digest header and the body must be hashed. */
const MAX_MANIFEST_BYTES = 4 << 20;

/** The digest a registry claims, only when exactly one: `pin` writes this untrusted header into specs. */
export function checkedDigest(registry: string, sent: string | readonly string[]): string {
  const value = typeof sent === 'string' ? sent : sent.join(', ');
  if (typeof sent !== 'string' || checkDigest(value) !== undefined) {
    const why = value.includes(',') ? 'several values (the header was sent more than once)' : 'not a sha256, sha384 or sha512 digest';
    throw new ApiError(200, `${registry} sent Docker-Content-Digest ${quote(value)}: ${why}; not trusted`);
  }
  return value;
}

/** The digest of a fetched manifest: its hash, checked against the header when one was sent. */
export function manifestDigest(registry: string, r: Pick<HttpResponse, 'headers' | 'body'>): string {
  const sent = r.headers['docker-content-digest'];
  const claimed = sent === undefined ? undefined : checkedDigest(registry, sent);
  const algorithm = claimed?.slice(0, claimed.indexOf(':')) ?? 'sha256';
  const actual = `${algorithm}:${createHash(algorithm).update(r.body).digest('hex')}`;
  // Only the hash of a manifest may be pinned, never of a truncated or foreign answer.
  if (claimed === undefined && !isManifest(r.body))
    throw new ApiError(
      200,
      `${registry} sent no Docker-Content-Digest and an answer that is not a manifest (a JSON object with schemaVersion); not trusted`,
    );
  if (claimed !== undefined && claimed !== actual)
    throw new ApiError(200, `${registry} sent Docker-Content-Digest ${claimed}, but the manifest it sent hashes to ${actual}; not trusted`);
  return actual;
}

/** Whether `body` reads as an image manifest or index: a JSON object with a numeric schemaVersion. */
function isManifest(body: string | Buffer): boolean {
  try {
    const parsed: unknown = JSON.parse(body.toString());
    return typeof parsed === 'object' && parsed !== null && typeof (parsed as { schemaVersion?: unknown }).schemaVersion === 'number';
  } catch {
    return false;
  }
}

export function apiHost(registry: string): string {
  return registry === DOCKER_HUB || registry === 'index.docker.io' ? DOCKER_HUB_API : registry;
}

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

/** An index first: a multi-arch tag resolves to it, and a pin must name its digest. */
export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/** Options of {@link OciRegistry}. */
export interface OciRegistryOptions {
  readonly keyring: Keyring;
  /** So registry logs tell the sidecar from the CLI. */
  readonly userAgent: string;
  /** Hosts (host[:port]) spoken to over plain HTTP; all else is verified HTTPS. @default none */
  readonly plainHttp?: ReadonlySet<string>;
  /** @default 15000 */
  readonly timeoutMs?: number;
  /** Ends every request under way when aborted: the deadline of a whole run. */
  readonly signal?: AbortSignal;
}

const basic = (c: Credential): string => `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

/** Registry digest client; caches tokens, so after the first challenge each check is one HEAD. */
export class OciRegistry {
  private readonly tokens = new Map<string, { token: string; until: number }>();
  private readonly basicScopes = new Set<string>();
  constructor(private readonly o: OciRegistryOptions) {}

  private base(host: string): string {
    const api = apiHost(host);
    const plain = [...(this.o.plainHttp ?? [])].some((h) => registryHost(h) === api);
    return `${plain ? 'http' : 'https'}://${api}`;
  }

  /** The digest `image` resolves to now; without a digest header, the hash of the manifest. */
  async digest(image: string): Promise<string> {
    const ref = registryRef(image);
    if (ref.digest) return ref.digest;
    const host = registryHost(ref.domain);
    const head = await this.manifest(image, ref, host, 'HEAD');
    const sent = head.headers['docker-content-digest'];
    if (sent !== undefined) return checkedDigest(host, sent);
    return manifestDigest(host, await this.manifest(image, ref, host, 'GET'));
  }

  /** The compressed size of `image` for `platform`: at most two bounded GETs, and a manifest fetched by digest must hash to it. */
  async compressedSize(image: string, platform: Platform): Promise<number> {
    return (await this.imageSize(image, platform)).compressed;
  }

  /** Compressed and, where the manifest tells it, uncompressed; as {@link compressedSize}. */
  async imageSize(image: string, platform: Platform): Promise<ImageBytes> {
    const ref = registryRef(image);
    const host = registryHost(ref.domain);
    let reference = ref.digest ?? ref.tag ?? 'latest';
    for (let depth = 0; depth < 2; depth++) {
      const r = await this.manifest(image, ref, host, 'GET', reference);
      const digest = manifestDigest(host, r);
      if (reference.includes(':') && digest !== reference)
        throw new ApiError(200, `${host} sent a manifest that hashes to ${digest} for ${reference}; not trusted`);
      try {
        const doc = parseManifest(r.body);
        if (!isIndex(doc)) return imageBytes(doc);
        if (depth > 0) break;
        reference = platformDigest(doc, platform);
      } catch (err) {
        throw new ApiError(200, `${image}: ${(err as Error).message}`);
      }
    }
    throw new ApiError(200, `${image}: an index names another index for ${platform.os}/${platform.architecture}; not read`);
  }

  /** One manifest request, through the auth challenge when there is one; resolves on 200 only. */
  private async manifest(
    image: string,
    ref: ImageRef,
    host: string,
    method: 'HEAD' | 'GET',
    reference: string = ref.tag ?? 'latest',
  ): Promise<HttpResponse> {
    const url = new URL(`${this.base(host)}/v2/${ref.path}/manifests/${reference}`);
    const cred = this.o.keyring.lookup(host, ref.path);
    const scopeKey = `${host}/${ref.path}`;
    const cached = this.tokens.get(scopeKey);
    let auth =
      cached && cached.until > Date.now() ? `Bearer ${cached.token}` : cred && this.basicScopes.has(scopeKey) ? basic(cred) : undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await request({
        method,
        url,
        headers: { accept: MANIFEST_ACCEPT, 'user-agent': this.o.userAgent, ...(auth ? { authorization: auth } : {}) },
        timeoutMs: this.o.timeoutMs ?? 15_000,
        maxBody: MAX_MANIFEST_BYTES,
        ...(this.o.signal ? { signal: this.o.signal } : {}),
      });
      if (r.status === 200) return r;
      if (r.status !== 401 || attempt > 0) throw new ApiError(r.status, `${method} ${url.host}${url.pathname}: ${r.status}`);
      const header = r.headers['www-authenticate'] ?? '';
      const ch = parseChallenge(header);
      if (ch?.scheme === 'basic') {
        if (!cred) throw new ApiError(401, `${image}: registry wants basic auth and no pull secret matches ${host}`);
        auth = basic(cred);
        this.basicScopes.add(scopeKey);
      } else if (ch?.scheme === 'bearer' && ch.params.realm) {
        const token = await this.fetchToken(host, ch.params, `repository:${ref.path}:pull`, cred);
        this.tokens.set(scopeKey, { token: token.token, until: Date.now() + Math.max(0, token.expiresIn - 30) * 1000 });
        auth = `Bearer ${token.token}`;
      } else {
        throw new ApiError(401, `${image}: ${host} sent an unsupported auth challenge ${quote(header)}`);
      }
    }
    throw new ApiError(401, `${image}: unauthorized`);
  }

  /** Distribution token flow: GET realm?service&scope, with basic auth when we have credentials. */
  private async fetchToken(
    host: string,
    params: Readonly<Record<string, string>>,
    fallbackScope: string,
    cred: Credential | undefined,
  ): Promise<{ token: string; expiresIn: number }> {
    let url: URL;
    try {
      url = new URL(params.realm as string);
    } catch {
      throw new ApiError(401, `${host} named a token realm that is not a URL: ${quote(params.realm as string)}`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new ApiError(401, `${host} named a token realm that is not http(s): ${quote(url.protocol)}`);
    if (params.service) url.searchParams.set('service', params.service);
    url.searchParams.set('scope', params.scope ?? fallbackScope);
    const r = await request({
      method: 'GET',
      url,
      headers: { accept: 'application/json', 'user-agent': this.o.userAgent, ...(cred ? { authorization: basic(cred) } : {}) },
      timeoutMs: this.o.timeoutMs ?? 15_000,
      maxBody: 64 << 10,
      ...(this.o.signal ? { signal: this.o.signal } : {}),
    });
    if (r.status !== 200) throw new ApiError(r.status, `token ${url.host}${url.pathname}: ${r.status}`);
    let body: { token?: unknown; access_token?: unknown; expires_in?: unknown };
    try {
      body = JSON.parse(r.body.toString('utf8')) as typeof body;
    } catch {
      throw new ApiError(r.status, `token ${url.host}${url.pathname}: the answer is not JSON`);
    }
    const token = typeof body?.token === 'string' ? body.token : typeof body?.access_token === 'string' ? body.access_token : '';
    if (token === '') throw new ApiError(r.status, `token ${url.host}: no token in response`);
    const expiresIn = typeof body.expires_in === 'number' && Number.isFinite(body.expires_in) ? body.expires_in : 60;
    return { token, expiresIn };
  }
}
