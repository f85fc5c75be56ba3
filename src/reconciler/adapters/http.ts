/**
 * A thin JSON client over node:http/node:https, shared by the apiserver and registry adapters.
 *
 * Why not @kubernetes/client-node at run time: importing it costs 50–70 MiB of RSS in Node 20
 * (node-fetch, openid-client, ws, js-yaml, the generated models; measured with
 * `--max-old-space-size=32`), over the sidecar's 48 MiB budget on its own. The sidecar needs four
 * apiserver calls (GET/watch pod, GET/PATCH node, POST event), which this file covers in ~150 lines.
 * Not even global `fetch`: it lazily loads undici, several MiB more.
 */
import http from 'node:http';
import https from 'node:https';
import { ApiError } from '../ports.js';

/** The sidecar's User-Agent towards the apiserver and registries, so their logs name it. */
export const USER_AGENT = 'prewarm-reconciler';

/** Where and how to reach a server. */
export interface Endpoint {
  /** `https://host:port` (or `http://` for loopback fakes). */
  readonly server: string;
  readonly ca?: string | Buffer;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** Read before every request: projected SA tokens rotate on disk. */
  readonly token?: () => string | undefined;
  readonly insecureSkipTLSVerify?: boolean;
}

/** A response with its body read. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Options of one request. */
export interface RequestOptions {
  readonly method: string;
  readonly url: URL;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly agent?: http.Agent;
  /** Aborts a request that takes longer (ms). @default 30000 */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Keep at most this many body bytes (the rest is drained). @default 4 MiB */
  readonly maxBody?: number;
}

/**
 * One HTTP exchange; rejects with ApiError(0) on transport errors and timeouts. A request that
 * failed on a reused keep-alive socket before any response (the server had closed it meanwhile)
 * is sent once more on a fresh socket, as Go's transport does: the server never saw it.
 */
export async function request(o: RequestOptions): Promise<HttpResponse> {
  try {
    return await requestOnce(o);
  } catch (e) {
    if (e instanceof StaleSocket) return requestOnce(o);
    throw e;
  }
}

/** Failure on a reused socket before the response started. */
class StaleSocket extends ApiError {}

function requestOnce(o: RequestOptions): Promise<HttpResponse> {
  const mod = o.url.protocol === 'http:' ? http : https;
  const maxBody = o.maxBody ?? 4 << 20;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      o.url,
      {
        method: o.method,
        headers: { ...(o.body !== undefined ? { 'content-length': String(Buffer.byteLength(o.body)) } : {}), ...o.headers },
        ...(o.agent ? { agent: o.agent } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        timeout: o.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < maxBody) chunks.push(c);
          size += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', (e) => reject(new ApiError(0, e.message)));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout after ${o.timeoutMs ?? 30_000} ms`)));
    let responded = false;
    req.on('response', () => (responded = true));
    req.on('error', (e) => {
      const msg = `${o.method} ${o.url.host}${o.url.pathname}: ${e.message}`;
      const stale =
        req.reusedSocket && !responded && ((e as NodeJS.ErrnoException).code === 'ECONNRESET' || e.message === 'socket hang up');
      reject(stale ? new StaleSocket(0, msg) : new ApiError(0, msg));
    });
    if (o.body !== undefined) req.write(o.body);
    req.end();
  });
}

/** A Kubernetes `Status` body turned into an ApiError. */
function statusError(method: string, path: string, r: HttpResponse): ApiError {
  let message = r.body.toString('utf8').slice(0, 500);
  let reason: string | undefined;
  try {
    const s = JSON.parse(message) as { message?: string; reason?: string };
    message = s.message ?? message;
    reason = s.reason;
  } catch {
    // not a Status object; keep the raw text
  }
  return new ApiError(r.status, `${method} ${path}: ${r.status} ${message}`, reason);
}

/** The apiserver client: JSON requests and a line-delimited watch stream. */
export class KubeHttp {
  private readonly agent: http.Agent;
  /** Watches get their own sockets, never pooled: a stream's socket must not serve a PATCH later. */
  private readonly watchAgent: http.Agent;
  constructor(readonly endpoint: Endpoint) {
    const url = new URL(endpoint.server);
    const tls = {
      ...(endpoint.ca ? { ca: endpoint.ca } : {}),
      ...(endpoint.cert ? { cert: endpoint.cert } : {}),
      ...(endpoint.key ? { key: endpoint.key } : {}),
      rejectUnauthorized: !endpoint.insecureSkipTLSVerify,
    };
    // One keep-alive connection serves the reconciles; the watch holds a second one.
    this.agent =
      url.protocol === 'http:'
        ? new http.Agent({ keepAlive: true, maxSockets: 4 })
        : new https.Agent({ keepAlive: true, maxSockets: 4, ...tls });
    this.watchAgent = url.protocol === 'http:' ? new http.Agent({ keepAlive: false }) : new https.Agent({ keepAlive: false, ...tls });
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    const token = this.endpoint.token?.();
    return { accept: 'application/json', 'user-agent': USER_AGENT, ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
  }

  /** A JSON request; non-2xx rejects with the apiserver's Status code and reason. */
  async json<T>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const r = await request({
      method,
      url: new URL(path, this.endpoint.server),
      headers: this.headers(body !== undefined ? { 'content-type': contentType } : {}),
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      agent: this.agent,
    });
    if (r.status < 200 || r.status >= 300) throw statusError(method, path, r);
    return JSON.parse(r.body.toString('utf8')) as T;
  }

  /**
   * GET a watch URL and call `onObject` per JSON line. Resolves when the server ends the stream
   * (its `timeoutSeconds`), rejects on errors; an `ERROR` event carrying a Status rejects with that
   * Status's code (410 Expired → the caller GETs again).
   */
  watch(
    path: string,
    onObject: (o: { type: string; object: unknown }) => void,
    signal: AbortSignal,
    idleTimeoutMs = 330_000,
  ): Promise<void> {
    const url = new URL(path, this.endpoint.server);
    const mod = url.protocol === 'http:' ? http : https;
    return new Promise((resolve, reject) => {
      const req = mod.request(
        url,
        { method: 'GET', headers: this.headers({}), agent: this.watchAgent, signal, timeout: idleTimeoutMs },
        (res) => {
          if ((res.statusCode ?? 0) !== 200) {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              reject(
                statusError('WATCH', url.pathname, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
              ),
            );
            return;
          }
          let buf = '';
          let failed = false;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buf += chunk;
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (!line) continue;
              let ev: { type: string; object: { code?: number; message?: string; reason?: string } };
              try {
                ev = JSON.parse(line) as typeof ev;
              } catch {
                failed = true;
                req.destroy();
                reject(new ApiError(0, 'watch: malformed line'));
                return;
              }
              if (ev.type === 'ERROR') {
                failed = true;
                req.destroy();
                reject(new ApiError(ev.object.code ?? 500, `watch: ${ev.object.message ?? 'error'}`, ev.object.reason));
                return;
              }
              onObject(ev);
            }
          });
          res.on('end', () => {
            if (!failed) resolve();
          });
          res.on('error', (e) => {
            if (!failed) reject(new ApiError(0, `watch: ${e.message}`));
          });
          // An abort after the headers arrived may end the stream with only 'close'.
          res.on('close', () => {
            if (!failed && !res.complete) reject(new ApiError(0, signal.aborted ? 'aborted' : 'watch: connection closed'));
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('watch idle timeout')));
      req.on('error', (e) => reject(signal.aborted ? new ApiError(0, 'aborted') : new ApiError(0, `watch: ${e.message}`)));
      req.end();
    });
  }

  /** Closes idle keep-alive sockets (shutdown, tests). */
  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }
}
