/**
 * A thin JSON client over node:http/node:https for the sidecar and the CLI: @kubernetes/client-node,
 * or even global `fetch` (undici), would cost the sidecar more memory than its budget allows.
 */
import http from 'node:http';
import https from 'node:https';
import { excerpt } from '../text/quote.js';
import { ApiError } from './api-error.js';
import { LineSplitter } from './lines.js';

/** The sidecar's User-Agent towards the apiserver and registries, so their logs name it. */
export const USER_AGENT = 'prewarm-reconciler';

export interface Endpoint {
  /** `https://host:port` (or `http://` for loopback fakes). */
  readonly server: string;
  readonly ca?: string | Buffer;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** Read before every request: projected SA tokens rotate on disk. */
  readonly token?: () => string | undefined;
  readonly insecureSkipTLSVerify?: boolean;
  /** The total deadline of each non-watch request (ms). @default {@link DEFAULT_REQUEST_TIMEOUT_MS} */
  readonly requestTimeoutMs?: number;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface RequestOptions {
  readonly method: string;
  readonly url: URL;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly agent?: http.Agent;
  /** The whole exchange's deadline (ms): an idle timeout alone never stops a server that drips. @default 30000 */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** A body longer than this many bytes fails the request (the server is not one we can trust). @default 4 MiB */
  readonly maxBody?: number;
}

/** The default total deadline of one request (ms). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** The default cap on a response body, and on one line of a watch stream (bytes). */
export const DEFAULT_MAX_BODY = 4 << 20;

/**
 * One HTTP exchange; rejects with ApiError(0) on transport errors and timeouts. A failure on a
 * reused socket before any response is retried once on a fresh one, as Go's transport does.
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
  const maxBody = o.maxBody ?? DEFAULT_MAX_BODY;
  const timeoutMs = o.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      fn();
    };
    const fail = (message: string): void => done(() => reject(new ApiError(0, `${o.method} ${o.url.host}${o.url.pathname}: ${message}`)));
    const req = mod.request(
      o.url,
      {
        method: o.method,
        headers: { ...(o.body !== undefined ? { 'content-length': String(Buffer.byteLength(o.body)) } : {}), ...o.headers },
        ...(o.agent ? { agent: o.agent } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBody) {
            fail(`response body over ${maxBody} bytes`);
            req.destroy();
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => done(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })));
        res.on('error', (e) => fail(e.message));
        res.on('close', () => {
          if (!res.complete) fail('connection closed before the response ended');
        });
      },
    );
    // The total deadline; the socket's own timeout only measures idleness.
    const deadline = setTimeout(() => {
      fail(`no complete response within ${timeoutMs} ms`);
      req.destroy();
    }, timeoutMs);
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    let responded = false;
    req.on('response', () => (responded = true));
    req.on('error', (e) => {
      const msg = `${o.method} ${o.url.host}${o.url.pathname}: ${e.message}`;
      const stale =
        req.reusedSocket && !responded && ((e as NodeJS.ErrnoException).code === 'ECONNRESET' || e.message === 'socket hang up');
      done(() => reject(stale ? new StaleSocket(0, msg) : new ApiError(0, msg)));
    });
    if (o.body !== undefined) req.write(o.body);
    req.end();
  });
}

/** Servers are untrusted, and logs are read in terminals. */
const MAX_ERROR_TEXT = 500;

/** A Kubernetes `Status` body turned into an ApiError, its message escaped and bounded. */
function statusError(method: string, path: string, r: HttpResponse): ApiError {
  const text = r.body.subarray(0, 64 << 10).toString('utf8');
  let message = text;
  let reason: string | undefined;
  try {
    const s = JSON.parse(text) as { message?: unknown; reason?: unknown };
    if (typeof s.message === 'string') message = s.message;
    if (typeof s.reason === 'string') reason = s.reason;
  } catch {
    // not a Status object; keep the raw text
  }
  return new ApiError(r.status, `${method} ${path}: ${r.status} ${excerpt(message.trim(), MAX_ERROR_TEXT)}`, reason);
}

/** The longest watch event (one line of the stream) read, in characters. */
const MAX_WATCH_LINE = DEFAULT_MAX_BODY;

/** The most JSON objects and arrays in one watch event: a line of small ones costs far more heap than its length. */
export const MAX_WATCH_NESTS = 100_000;

/**
 * Whether `line` opens more than `max` objects and arrays (brackets inside strings count too). One
 * engine string search per bracket, stopping past `max`: a step per character in JavaScript costs
 * more than parsing the line, and a pod of hundreds of containers arrives whole on every watch
 * event. `line` needs only what the search reads, so tests can count its steps.
 */
export function tooManyNests(line: Pick<string, 'length' | 'indexOf'>, max: number): boolean {
  // A line cannot open more objects and arrays than it has characters.
  if (line.length <= max) return false;
  let n = 0;
  for (const bracket of ['{', '[']) {
    for (let i = line.indexOf(bracket); i >= 0; i = line.indexOf(bracket, i + 1)) if (++n > max) return true;
  }
  return false;
}

/** The apiserver client: requests with a deadline and a size cap; watches bounded by idle time and event size. */
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
    return {
      accept: 'application/json',
      'user-agent': USER_AGENT,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...extra,
    };
  }

  /** A JSON request; non-2xx rejects with the Status's code and reason, non-JSON with the HTTP status. */
  async json<T>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const r = await request({
      method,
      url: new URL(path, this.endpoint.server),
      headers: this.headers(body !== undefined ? { 'content-type': contentType } : {}),
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      agent: this.agent,
      timeoutMs: this.endpoint.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    });
    if (r.status < 200 || r.status >= 300) throw statusError(method, path, r);
    try {
      return JSON.parse(r.body.toString('utf8')) as T;
    } catch {
      throw new ApiError(r.status, `${method} ${path}: ${r.status} with an answer that is not JSON (${r.body.length} bytes)`, 'NotJSON');
    }
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
          if ((res.statusCode ?? 0) !== 200) return refuseWatch(req, res, url, reject);
          const lines = new LineSplitter(MAX_WATCH_LINE);
          let failed = false;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (failed) return;
            for (const raw of lines.push(chunk)) {
              const line = raw.trim();
              if (!line) continue;
              if (tooManyNests(line, MAX_WATCH_NESTS)) {
                failed = true;
                req.destroy();
                reject(new ApiError(0, `watch: an event of over ${MAX_WATCH_NESTS} objects and arrays`));
                return;
              }
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
            // One event per line: a line that never ends is a server to stop reading from.
            if (lines.overLimit) {
              failed = true;
              req.destroy();
              reject(new ApiError(0, `watch: an event over ${MAX_WATCH_LINE} bytes`));
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

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }
}

/** A watch the server refused: reads at most MAX_WATCH_LINE bytes of its answer, then rejects with its status. */
function refuseWatch(req: http.ClientRequest, res: http.IncomingMessage, url: URL, reject: (err: unknown) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const refuse = (): void =>
    reject(statusError('WATCH', url.pathname, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
  res.on('data', (c: Buffer) => {
    size += c.length;
    if (size <= MAX_WATCH_LINE) return void chunks.push(c);
    refuse();
    req.destroy();
  });
  res.on('end', refuse);
  res.on('close', refuse);
}
