/** The real clock and the `/metrics`, `/healthz` and startup-probe HTTP server. */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Metrics } from '../metrics.js';
import { EXPOSITION_CONTENT_TYPE } from '../metrics.js';
import { METRICS_PATH, STARTUP_PATH } from '../../contract/names.js';
import type { Clock } from '../ports.js';

/** Wall clock; sleeps are unref'd timers so they never keep a stopping process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  random: () => Math.random(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    }),
};

/** A clock `scale` times faster than the wall clock, for the soak bench; HTTP deadlines keep real time. */
export function scaledClock(scale: number, base: Clock = systemClock): Clock {
  const start = base.now();
  return {
    now: () => start + (base.now() - start) * scale,
    random: () => base.random(),
    sleep: (ms, signal) => base.sleep(Math.max(1, Math.round(ms / scale)), signal),
  };
}

/**
 * Bounds of the metrics and probe server: any pod may reach it, so no client may grow the heap
 * without bound or keep the kubelet's probe from being answered.
 */
export interface ServeLimits {
  /**
   * Connections held at once; one more closes the oldest. The kubelet's probe is answered in the
   * turn it connects, so it is never the oldest: idle and slow clients go first.
   * @default 64
   */
  readonly maxConnections?: number;
  /** The headers of a request must be complete this long after it began (ms). @default 5000 */
  readonly headersTimeoutMs?: number;
  /** A whole request must arrive within this (ms). @default 10000 */
  readonly requestTimeoutMs?: number;
  /** An idle keep-alive connection is closed after this (ms). @default 5000 */
  readonly keepAliveTimeoutMs?: number;
  /** A socket without any traffic is closed after this (ms). @default 10000 */
  readonly idleTimeoutMs?: number;
}

/** The largest request head read, in bytes: probes and scrapers send a few hundred. */
const MAX_HEADER_BYTES = 4096;
/** Header lines read per request. */
const MAX_HEADER_COUNT = 32;

/** Serves metrics, health and the startup probe on `host:port` (never all interfaces), within {@link ServeLimits}. */
export function serveMetrics(
  metrics: Metrics,
  host: string,
  port: number,
  started: () => boolean = () => true,
  limits: ServeLimits = {},
): Promise<{ server: http.Server; port: number }> {
  const keepAliveMs = limits.keepAliveTimeoutMs ?? 5000;
  const server = http.createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: limits.headersTimeoutMs ?? 5000,
      requestTimeout: limits.requestTimeoutMs ?? 10_000,
      keepAliveTimeout: keepAliveMs,
      // How often the two timeouts above are checked.
      connectionsCheckingInterval: Math.min(1000, keepAliveMs),
    },
    (req, res) => answer(metrics, started, req, res),
  );
  server.keepAliveTimeout = keepAliveMs;
  server.maxHeadersCount = MAX_HEADER_COUNT;
  server.timeout = limits.idleTimeoutMs ?? 10_000;
  evictOldest(server, limits.maxConnections ?? 64);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const a = server.address();
      resolve({ server, port: typeof a === 'object' && a ? a.port : port });
    });
  });
}

/** Holds at most `max` connections: each one beyond closes the oldest held (see {@link ServeLimits}). */
function evictOldest(server: http.Server, max: number): void {
  const held = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    // A Set iterates in insertion order: its first element is the oldest connection.
    while (held.size >= max) {
      const oldest = held.values().next().value as Socket;
      held.delete(oldest);
      oldest.destroy();
    }
    held.add(socket);
    socket.once('close', () => held.delete(socket));
  });
}

function answer(metrics: Metrics, started: () => boolean, req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { connection: 'close' }).end();
    return;
  }
  if (req.url === METRICS_PATH) {
    const body = metrics.render();
    res
      .writeHead(200, { 'content-type': EXPOSITION_CONTENT_TYPE, 'content-length': Buffer.byteLength(body) })
      .end(req.method === 'HEAD' ? undefined : body);
  } else if (req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
  } else if (req.url === STARTUP_PATH) {
    const ok = started();
    res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'warming\n');
  } else {
    res.writeHead(404).end();
  }
}
