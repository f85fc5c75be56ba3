/**
 * The throttling proxy of the remote registry profile (registry-profile.ts), run as a harness
 * daemon in the hub netns:
 *
 *   node --import tsx throttle-proxy.ts --listen 10.250.0.1:5001 --upstream 10.250.0.1:5000 --profile remote:...
 *
 * A TCP relay. Upstream → client (the pull direction) is queued per connection and released on a
 * tick: each connection at most its own cap, the connections of one client node (keyed by source
 * address: every node has its own netns address) together at most the node's cap, shared max-min
 * fairly, and with an upstream cap all nodes together at most that, shared max-min fairly among
 * the nodes (shareLinks); then it waits RTT/2. Client → upstream (requests) is only delayed: by RTT/2,
 * and on a new connection not before `connectRtts` RTTs after it was accepted. So a request costs
 * one RTT plus its transfer, a new connection its handshakes, and parallel streams share the
 * node's cap. TCP slow start and loss are not modelled.
 */
import { createServer, connect, type Socket } from 'node:net';
import { describeProfile, parseRegistryProfile, shareLinks, type RemoteShape } from './registry-profile.js';

/** The release tick (ms); a late tick releases for the time that really passed, up to MAX_DT. */
const TICK_MS = 5;
const MAX_DT_MS = 50;
/** Queued per connection above which its upstream is paused. */
const HIGH_WATER = 1 << 20;

function hostPort(s: string, flag: string): { host: string; port: number } {
  const i = s.lastIndexOf(':');
  const port = Number(s.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port)) throw new Error(`${flag} ${s}: want host:port`);
  return { host: s.slice(0, i), port };
}

function arg(name: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (v === undefined) throw new Error(`throttle-proxy: ${name} is required`);
  return v;
}

const listen = hostPort(arg('--listen'), '--listen');
const upstream = hostPort(arg('--upstream'), '--upstream');
const profile = parseRegistryProfile(arg('--profile'));
if (profile.name !== 'remote') throw new Error('throttle-proxy: only the remote profile is shaped');
const shape: RemoteShape = profile;
const half = shape.rttMs / 2;

/** One relayed connection's pull direction. */
interface Flow {
  readonly node: string;
  readonly up: Socket;
  readonly client: Socket;
  readonly queue: Buffer[];
  queued: number;
  /** Fraction of a byte the last tick allowed but could not send (rates are not whole bytes). */
  carry: number;
  upEnded: boolean;
  inFlight: number;
  closed: boolean;
}

const flows = new Set<Flow>();
const nodes = new Set<string>();
let connections = 0;
let bytesOut = 0;
let lastTick = Date.now();
let timer: NodeJS.Timeout | undefined;

function take(f: Flow, n: number): Buffer {
  const parts: Buffer[] = [];
  let need = n;
  while (need > 0 && f.queue.length > 0) {
    const head = f.queue[0] as Buffer;
    if (head.length <= need) {
      parts.push(head);
      f.queue.shift();
      need -= head.length;
    } else {
      parts.push(head.subarray(0, need));
      f.queue[0] = head.subarray(need);
      need = 0;
    }
  }
  f.queued -= n - need;
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

function finish(f: Flow): void {
  if (f.upEnded && f.queued === 0 && f.inFlight === 0 && !f.closed) f.client.end();
}

function anyQueued(): boolean {
  for (const f of flows) if (f.queued > 0) return true;
  return false;
}

function tick(): void {
  const now = Date.now();
  const dt = Math.min(MAX_DT_MS, now - lastTick);
  lastTick = now;
  const byNode = new Map<string, Flow[]>();
  for (const f of flows) {
    if (f.queued === 0) continue;
    const list = byNode.get(f.node);
    if (list === undefined) byNode.set(f.node, [f]);
    else list.push(f);
  }
  const lists = [...byNode.values()];
  const perConn = (shape.perConnectionBps * dt) / 1000;
  const grants = shareLinks(
    (shape.perNodeBps * dt) / 1000,
    shape.perUpstreamBps === undefined ? Number.POSITIVE_INFINITY : (shape.perUpstreamBps * dt) / 1000,
    lists.map((list) => list.map((f) => Math.min(f.queued, perConn + f.carry))),
  );
  lists.forEach((list, k) => {
    list.forEach((f, i) => {
      const allowed = grants[k]?.[i] ?? 0;
      const n = Math.min(f.queued, Math.floor(allowed));
      f.carry = f.queued > n ? allowed - n : 0;
      if (n === 0) return;
      const piece = take(f, n);
      f.inFlight++;
      setTimeout(() => {
        f.inFlight--;
        bytesOut += piece.length;
        if (!f.closed) f.client.write(piece);
        finish(f);
      }, half);
      if (f.queued < HIGH_WATER && f.up.isPaused()) f.up.resume();
    });
  });
  if (!anyQueued() && timer !== undefined) {
    clearInterval(timer);
    timer = undefined;
  }
}

function wake(): void {
  if (timer !== undefined) return;
  lastTick = Date.now();
  timer = setInterval(tick, TICK_MS);
}

function relay(client: Socket): void {
  const acceptedAt = Date.now();
  const node = client.remoteAddress ?? '?';
  nodes.add(node);
  connections++;
  const up = connect({ port: upstream.port, host: upstream.host, allowHalfOpen: true });
  const f: Flow = { node, up, client, queue: [], queued: 0, carry: 0, upEnded: false, inFlight: 0, closed: false };
  flows.add(f);
  const close = (): void => {
    if (f.closed) return;
    f.closed = true;
    flows.delete(f);
    client.destroy();
    up.destroy();
  };
  client.on('error', close);
  up.on('error', close);
  client.on('close', close);

  // Requests: delayed, in order (the same delay for all keeps the timers in order).
  const requestFloor = acceptedAt + shape.connectRtts * shape.rttMs;
  let clientEnded = false;
  let pendingUp = 0;
  client.on('data', (d: Buffer) => {
    pendingUp++;
    setTimeout(
      () => {
        pendingUp--;
        if (!f.closed) up.write(d);
        if (clientEnded && pendingUp === 0) up.end();
      },
      Math.max(0, requestFloor - Date.now()) + half,
    );
  });
  client.on('end', () => {
    clientEnded = true;
    if (pendingUp === 0) up.end();
  });

  up.on('data', (d: Buffer) => {
    f.queue.push(d);
    f.queued += d.length;
    if (f.queued >= HIGH_WATER) up.pause();
    wake();
  });
  up.on('end', () => {
    f.upEnded = true;
    finish(f);
  });
  up.on('close', () => {
    if (f.queued === 0 && f.inFlight === 0) close();
    else {
      f.upEnded = true;
    }
  });
}

// Half-open: a client that shuts down its side after the request still gets the response.
const server = createServer({ noDelay: true, allowHalfOpen: true }, relay);
server.listen(listen.port, listen.host, () => {
  process.stderr.write(
    `throttle-proxy on ${listen.host}:${listen.port} -> ${upstream.host}:${upstream.port}: ${describeProfile(profile)}\n`,
  );
});
const report = setInterval(() => {
  process.stderr.write(
    `${new Date().toISOString()} connections ${connections}, nodes ${nodes.size}, MiB out ${(bytesOut / (1 << 20)).toFixed(1)}\n`,
  );
}, 60_000);
report.unref();
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
