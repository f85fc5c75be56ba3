/**
 * A connection flood against a loopback HTTP server, as a pod of the cluster could send it to a
 * sidecar's metrics port: idle TCP connections that never send a byte, and slowloris clients that
 * send a partial request head and then one more header byte now and then. Every loop is bounded by
 * the counts given, and `close()` ends it all. Used by the sidecar server's unit test and by
 * bench/soak.ts.
 */
import http from 'node:http';
import net from 'node:net';

/** What to open. */
export interface FloodOptions {
  readonly host: string;
  readonly port: number;
  /** Connections that never send anything. */
  readonly idle: number;
  /** Connections that send a partial request head, then drip one header byte per `dripMs`. */
  readonly slow: number;
  /** @default 500 */
  readonly dripMs?: number;
  /** Connections opened before yielding to the event loop. @default 200 */
  readonly batch?: number;
}

/** A running flood. */
export interface Flood {
  /** Connections the server closed so far (it evicted or timed them out). */
  readonly closedByServer: () => number;
  /** Connections still open on our side. */
  readonly open: () => number;
  /** Opens `idle` + `slow` more connections, as at the start. */
  renew(): Promise<void>;
  close(): void;
}

/** Opens the flood; resolves once every connection has been attempted. */
export async function startFlood(o: FloodOptions): Promise<Flood> {
  const sockets = new Set<net.Socket>();
  let closedByServer = 0;
  let stopped = false;
  const drip = setInterval(() => {
    for (const s of sockets) if ((s as net.Socket & { slow?: boolean }).slow && s.writable) s.write('a');
  }, o.dripMs ?? 500);
  drip.unref();
  const connect = (slow: boolean): void => {
    const s = net.connect(o.port, o.host) as net.Socket & { slow?: boolean };
    s.slow = slow;
    s.on('error', () => undefined);
    s.on('data', () => undefined);
    s.on('close', () => {
      if (sockets.delete(s) && !stopped) closedByServer++;
    });
    if (slow) s.write(`GET /metrics HTTP/1.1\r\nHost: ${o.host}\r\nX-Slow: `);
    sockets.add(s);
  };
  const open = async (): Promise<void> => {
    const batch = o.batch ?? 200;
    const total = o.idle + o.slow;
    for (let i = 0; i < total && !stopped; i++) {
      connect(i >= o.idle);
      if (i % batch === batch - 1) await new Promise((r) => setImmediate(r));
    }
  };
  await open();
  return {
    closedByServer: () => closedByServer,
    open: () => sockets.size,
    renew: open,
    close: () => {
      stopped = true;
      clearInterval(drip);
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
  };
}

/**
 * One GET as the kubelet's prober sends it: a fresh connection (no keep-alive) and a deadline.
 * Resolves with the status code, or 0 when no answer came in time or the connection failed.
 */
export function probe(host: string, port: number, path: string, timeoutMs = 1000): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path, agent: false, headers: { connection: 'close' }, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}
