/** The real clock and the `/metrics`, `/healthz` and startup-probe HTTP server. */
import http from 'node:http';
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

/**
 * Serves `GET /metrics`, `GET /healthz` and the startup probe ({@link STARTUP_PATH}: 200 when
 * `started()` says so, else 503) on `host:port` (the pod IP, never all interfaces). Resolves with
 * the server once it listens and with the actual port (for port 0 in tests).
 */
export function serveMetrics(
  metrics: Metrics,
  host: string,
  port: number,
  started: () => boolean = () => true,
): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
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
  });
  server.keepAliveTimeout = 5000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const a = server.address();
      resolve({ server, port: typeof a === 'object' && a ? a.port : port });
    });
  });
}
