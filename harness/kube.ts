/**
 * The harness's apiserver client, for tests and benchmarks alike: JSON requests and watch streams
 * with the admin client certificate, by default over the netns cluster's loopback forward
 * (https://127.0.0.1:16443). No dependency on client-node, so a benchmark measures the cluster,
 * not a client library's caching. Failures are the sidecar's own {@link ApiError}, so one
 * `instanceof` and one `code` serve every client a test uses.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { ApiError } from '../src/http/api-error.js';
import { LineSplitter } from '../src/http/lines.js';
import { apiserverUrl } from './cluster/config.js';
import { adminCert, CA_CRT } from './cluster/pki.js';
import { sleep } from './time.js';

/** The one API error of tests, benchmarks and the sidecar: `code` is the HTTP status (0: transport). */
export { ApiError };

/** An apiserver object as JSON, with the metadata the harness reads typed. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    uid?: string;
    generateName?: string;
    ownerReferences?: unknown[];
  };
  spec?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  status?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  [k: string]: unknown;
}
/** A list response: its items and the resourceVersion to watch from. */
export interface KubeList<T = KubeObject> {
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

/** A non-2xx answer as an ApiError: the HTTP code, the Status reason when the body is one, and the body's start. */
function apiError(what: string, status: number, body: string): ApiError {
  let reason: string | undefined;
  try {
    reason = (JSON.parse(body) as { reason?: unknown }).reason as string | undefined;
  } catch {
    // not a Status object
  }
  return new ApiError(status, `${what}: HTTP ${status}: ${body.slice(0, 300)}`, typeof reason === 'string' ? reason : undefined);
}

/** Retries of one request the apiserver answered 429 (Too Many Requests) before its answer is returned. */
export const MAX_429_RETRIES = 5;
/** The longest wait before one retry, whatever Retry-After asks (ms). */
export const MAX_RETRY_WAIT_MS = 10_000;
/** The wait before a retry when Retry-After is absent or unreadable: doubled per attempt (ms). */
const RETRY_BASE_MS = 500;

/**
 * How long to wait before retrying an answer with `status` and `retryAfter` (the Retry-After header:
 * seconds or an HTTP date), after `attempt` retries already made; undefined for no retry. Only a 429
 * is retried: the apiserver's priority and fairness rejects with it before doing anything, so a
 * retried write is not applied twice. Bounded in count and in each wait, so a storm of 429s ends
 * with the 429 returned, not a hang. `now` is for the date form.
 */
export function retryDelayMs(status: number, retryAfter: string | undefined, attempt: number, now = Date.now()): number | undefined {
  if (status !== 429 || attempt >= MAX_429_RETRIES) return undefined;
  const backoff = Math.min(MAX_RETRY_WAIT_MS, RETRY_BASE_MS * 2 ** attempt);
  const v = retryAfter?.trim() ?? '';
  if (/^\d+$/.test(v)) return Math.min(MAX_RETRY_WAIT_MS, Number(v) * 1000);
  const date = v === '' ? Number.NaN : Date.parse(v);
  if (Number.isFinite(date)) return Math.min(MAX_RETRY_WAIT_MS, Math.max(0, date - now));
  return backoff;
}

/** Token bucket like client-go's flowcontrol (QPS, burst); `take` waits for a token. */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();
  constructor(
    readonly qps: number,
    readonly burst: number,
  ) {
    this.tokens = burst;
  }
  /** Reserves a token and returns the delay in ms before it may be used. */
  reserve(): number {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }
  async take(): Promise<void> {
    const d = this.reserve();
    if (d > 0) await sleep(d);
  }
}

/** How a {@link Kube} client reaches and paces the apiserver. */
export interface KubeOptions {
  /** The apiserver's URL; the netns cluster's loopback forward when absent. */
  server?: string;
  /** Client-side rate limit (client-go's default is 5 QPS, burst 10); none when absent. */
  limiter?: TokenBucket;
  /** @default prewarm-harness */
  userAgent?: string;
}

const USER_AGENT = 'prewarm-harness';

/** The harness's apiserver client (admin identity); {@link Kube.close} ends its keep-alive sockets. */
export class Kube {
  private readonly ca = readFileSync(CA_CRT);
  private readonly cert: Buffer;
  private readonly key: Buffer;
  private readonly agent: Agent;
  readonly base: string;
  /** Requests sent, by "VERB resource" (for reporting a component's own API cost). */
  readonly counts = new Map<string, number>();
  /** Requests sent again after a 429 (each also counted in {@link counts}). */
  retries = 0;

  constructor(private readonly opts: KubeOptions = {}) {
    this.base = opts.server ?? apiserverUrl();
    const c = adminCert();
    this.cert = readFileSync(c.crt);
    this.key = readFileSync(c.key);
    this.agent = new Agent({ keepAlive: true, maxSockets: 16, ca: this.ca, cert: this.cert, key: this.key });
  }

  /** Destroys the keep-alive sockets, so a finished test or benchmark can exit. */
  close(): void {
    this.agent.destroy();
  }

  private count(method: string, path: string): void {
    const parts = path.split('?')[0]!.split('/').filter(Boolean);
    // /api/v1/namespaces/ns/pods/name -> pods; /apis/g/v/namespaces/ns/jobs -> jobs
    const start = parts[0] === 'api' ? 2 : 3;
    let rest = parts.slice(start);
    if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
    const k = `${method} ${rest[0] ?? ''}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
  }

  /**
   * One request; the status and body as they came, whatever the status (rejects only on transport
   * errors). A 429 is retried as {@link retryDelayMs} says; the last answer is returned.
   */
  async raw(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
    timeoutMs = 60_000,
  ): Promise<{ status: number; text: string }> {
    for (let attempt = 0; ; attempt++) {
      const r = await this.once(method, path, body, contentType, timeoutMs);
      const wait = retryDelayMs(r.status, r.retryAfter, attempt);
      if (wait === undefined) return { status: r.status, text: r.text };
      this.retries++;
      await sleep(wait);
    }
  }

  private async once(
    method: string,
    path: string,
    body: unknown,
    contentType: string,
    timeoutMs: number,
  ): Promise<{ status: number; text: string; retryAfter: string | undefined }> {
    if (this.opts.limiter) await this.opts.limiter.take();
    this.count(method, path);
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        this.base + path,
        {
          method,
          agent: this.agent,
          timeout: timeoutMs,
          headers: {
            Accept: 'application/json',
            'User-Agent': this.opts.userAgent ?? USER_AGENT,
            ...(payload !== undefined ? { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          const retryAfter = res.headers['retry-after'];
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text, retryAfter }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`timeout ${method} ${path}`)));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** One request whose 2xx body is parsed; any other status throws {@link ApiError}. */
  async json<T = KubeObject>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    const r = await this.raw(method, path, body, contentType);
    if (r.status < 200 || r.status >= 300) throw apiError(`${method} ${path}`, r.status, r.text);
    return JSON.parse(r.text) as T;
  }
  /** GET that throws {@link ApiError} on any non-2xx, 404 included. */
  get<T = KubeObject>(path: string): Promise<T> {
    return this.json<T>('GET', path);
  }
  /** GET that answers undefined for 404. */
  async getOpt<T = KubeObject>(path: string): Promise<T | undefined> {
    const r = await this.raw('GET', path);
    if (r.status === 404) return undefined;
    if (r.status !== 200) throw apiError(`GET ${path}`, r.status, r.text);
    return JSON.parse(r.text) as T;
  }
  /** POST to a collection. */
  create<T = KubeObject>(path: string, body: unknown): Promise<T> {
    return this.json<T>('POST', path, body);
  }
  /** PUT (replace; the body's resourceVersion guards against lost updates). */
  put<T = KubeObject>(path: string, body: unknown): Promise<T> {
    return this.json<T>('PUT', path, body);
  }
  /** JSON merge patch. */
  mergePatch<T = KubeObject>(path: string, body: unknown): Promise<T> {
    return this.json<T>('PATCH', path, body, 'application/merge-patch+json');
  }
  /** Server-side apply of one object (force, own field manager). */
  apply(obj: KubeObject, fieldManager = USER_AGENT): Promise<KubeObject> {
    return this.json('PATCH', `${objectPath(obj)}?fieldManager=${fieldManager}&force=true`, obj, 'application/apply-patch+yaml');
  }
  /** DELETE with a propagation policy; false when the object was already gone (404). */
  async delete(path: string, propagation: 'Background' | 'Foreground' | 'Orphan' = 'Background'): Promise<boolean> {
    const r = await this.raw('DELETE', path, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: propagation });
    if (r.status === 404) return false;
    if (r.status < 200 || r.status >= 300) throw apiError(`DELETE ${path}`, r.status, r.text);
    return true;
  }
  /** Lists all pages. */
  async list<T = KubeObject>(path: string, params: Record<string, string> = {}): Promise<KubeList<T>> {
    const items: T[] = [];
    let cont = '';
    let rv = '';
    for (let page = 0; page < 1000; page++) {
      const q = new URLSearchParams({ ...params, limit: '500', ...(cont ? { continue: cont } : {}) });
      const l = await this.get<KubeList<T>>(`${path}?${q.toString()}`);
      items.push(...l.items);
      rv = l.metadata.resourceVersion;
      cont = l.metadata.continue ?? '';
      if (!cont) break;
    }
    return { metadata: { resourceVersion: rv }, items };
  }

  /**
   * Watches `path` from `resourceVersion`; calls onEvent per event until the returned stop() is
   * called or the server closes the stream (then onClose).
   */
  watch(
    path: string,
    params: Record<string, string>,
    onEvent: (type: string, obj: KubeObject) => void,
    onClose: (err?: Error) => void,
  ): () => void {
    const q = new URLSearchParams({ ...params, watch: 'true', allowWatchBookmarks: 'true' });
    let stopped = false;
    void (this.opts.limiter ? this.opts.limiter.take() : Promise.resolve()).then(() => {
      if (stopped) return;
      this.count('WATCH', path);
      const req = request(
        this.base + `${path}?${q.toString()}`,
        { method: 'GET', agent: this.agent, headers: { Accept: 'application/json', 'User-Agent': this.opts.userAgent ?? USER_AGENT } },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            onClose(new Error(`watch ${path}: HTTP ${res.statusCode}`));
            return;
          }
          const lines = new LineSplitter(Number.POSITIVE_INFINITY);
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            for (const line of lines.push(d)) {
              if (!line.trim()) continue;
              const ev = JSON.parse(line) as { type: string; object: KubeObject };
              onEvent(ev.type, ev.object);
            }
          });
          res.on('end', () => onClose());
          res.on('error', (e) => onClose(e));
        },
      );
      req.on('error', (e) => {
        if (!stopped) onClose(e);
      });
      req.end();
      stopFn = () => req.destroy();
    });
    let stopFn = (): void => undefined;
    return () => {
      stopped = true;
      stopFn();
    };
  }
}

const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);

/** The resource name of a kind: English plural of the lower-cased kind (policy -> policies, ingress -> ingresses). */
function plural(kind: string): string {
  const k = kind.toLowerCase();
  if (k.endsWith('y')) return `${k.slice(0, -1)}ies`;
  return /(s|x)$/.test(k) ? `${k}es` : `${k}s`;
}

/** REST path of the collection an object belongs to (best effort over the kinds tests and benchmarks use). */
export function collectionPath(o: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>): string {
  const av = o.apiVersion ?? 'v1';
  const kind = o.kind ?? '';
  const prefix = av.includes('/') ? `/apis/${av}` : `/api/${av}`;
  const ns = CLUSTER_SCOPED.has(kind) ? '' : `/namespaces/${o.metadata.namespace ?? 'default'}`;
  return `${prefix}${ns}/${plural(kind)}`;
}

/** REST path of an object. */
export function objectPath(o: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>): string {
  return `${collectionPath(o)}/${o.metadata.name}`;
}

/** Reads apiserver_request_total as counts by "VERB resource" (admin /metrics). */
export async function requestTotals(kube: Kube): Promise<Map<string, number>> {
  const r = await kube.raw('GET', '/metrics', undefined, undefined, 120_000);
  const out = new Map<string, number>();
  for (const line of r.text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    const key = `${labels['verb']} ${labels['resource']}${labels['subresource'] ? '/' + labels['subresource'] : ''}|${labels['code']}`;
    out.set(key, (out.get(key) ?? 0) + v);
  }
  return out;
}

/** What `after` counted beyond `before`, per key (keys that did not grow are left out). */
export function diffTotals(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const d = new Map<string, number>();
  for (const [k, v] of after) {
    const x = v - (before.get(k) ?? 0);
    if (x > 0) d.set(k, x);
  }
  return d;
}
