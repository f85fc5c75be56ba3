/**
 * Servers that misbehave on purpose, on 127.0.0.1: an apiserver or registry that accepts and never
 * answers, drips a byte at a time, streams without end, answers 500 to everything with a huge body
 * full of terminal escapes, or lies about a manifest's digest. Shared by the unit tests of the HTTP
 * client, `pin`, `status` and `doctor`, and by the fuzz runs that draw behaviours from
 * {@link HOSTILE_BEHAVIOURS}. Every server is started by the test and stopped by it; `stop()` also
 * ends every connection still held open.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/** One way of misbehaving. */
export type HostileBehaviour =
  /** Accepts the connection, reads the request, never writes a byte. */
  | { readonly kind: 'silent' }
  /** Writes the response head one byte per `everyMs`, never finishing. */
  | { readonly kind: 'drip-head'; readonly everyMs: number }
  /** Sends 200 with a chunked body that drips one byte per `everyMs`, never ending. */
  | { readonly kind: 'drip-body'; readonly everyMs: number }
  /** Sends 200 and a chunked body as fast as the socket takes it, never ending. */
  | { readonly kind: 'endless-body' }
  /** Answers every request with `status` and a body of `bytes` bytes of escapes and text. */
  | { readonly kind: 'huge-error'; readonly status: number; readonly bytes: number }
  /** Answers every request with a Kubernetes Status of code `status` whose message holds raw escapes. */
  | { readonly kind: 'status'; readonly status: number }
  /** Answers 200 with the first `keep` bytes of a JSON body, then closes. */
  | { readonly kind: 'truncated-json'; readonly keep: number }
  /** A registry that answers every manifest request 200 with this `Docker-Content-Digest` (or several). */
  | { readonly kind: 'digest'; readonly values: readonly string[]; readonly body?: string }
  /** A registry whose bearer challenge names a token realm on this server that drips its answer. */
  | { readonly kind: 'drip-token'; readonly everyMs: number };

/** Every behaviour kind, with parameters a test run can afford (a few seconds at most). */
export const HOSTILE_BEHAVIOURS: readonly HostileBehaviour[] = [
  { kind: 'silent' },
  { kind: 'drip-head', everyMs: 200 },
  { kind: 'drip-body', everyMs: 200 },
  { kind: 'endless-body' },
  { kind: 'huge-error', status: 500, bytes: 300 << 10 },
  { kind: 'status', status: 500 },
  { kind: 'status', status: 403 },
  { kind: 'truncated-json', keep: 40 },
  { kind: 'digest', values: [`sha256:${'a'.repeat(64)}, evil.example.com/miner:1`] },
  { kind: 'digest', values: [`sha256:${'a'.repeat(64)}`, `sha256:${'b'.repeat(64)}`] },
  { kind: 'digest', values: [`sha256:${'a'.repeat(64)} #x`] },
  { kind: 'digest', values: [`sha256:${'a'.repeat(64)}`], body: '{"not":"the manifest of that digest"}' },
  { kind: 'drip-token', everyMs: 200 },
];

/** Text with terminal escapes, a NUL and a direction override: what must never reach a terminal raw. */
export const HOSTILE_TEXT = '\u001b[2J\u001b]0;owned\u0007\u0000\u202e gnirts';

/** A started server. */
export interface HostileServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** `127.0.0.1:PORT`, as an image reference's domain names it. */
  readonly host: string;
  /** Requests received so far. */
  readonly requests: number;
  stop(): Promise<void>;
}

/** Starts a server that behaves as `behaviour` on every request. */
export async function startHostileServer(behaviour: HostileBehaviour): Promise<HostileServer> {
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let requests = 0;
  // Writes one character of `text` per `ms` until the peer goes away.
  const drip = (out: { readonly destroyed: boolean; write(s: string): boolean }, ms: number, text: string): void => {
    let i = 0;
    const t = setInterval(() => {
      if (out.destroyed) {
        clearInterval(t);
        timers.delete(t);
      } else out.write(text[i++ % text.length] ?? ' ');
    }, ms);
    timers.add(t);
  };
  let server: net.Server;
  let self = '';
  if (behaviour.kind === 'silent' || behaviour.kind === 'drip-head') {
    server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => {
        requests++;
        if (behaviour.kind !== 'drip-head') return;
        const head = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-drip: ' + 'x'.repeat(1 << 20);
        drip(socket, behaviour.everyMs, head);
      });
    });
  } else {
    server = http.createServer((req, res) => {
      requests++;
      req.resume();
      res.on('error', () => undefined);
      switch (behaviour.kind) {
        case 'drip-body':
          res.writeHead(200, { 'content-type': 'application/json', 'docker-content-digest': `sha256:${'d'.repeat(64)}` });
          drip(res, behaviour.everyMs, '[');
          return;
        case 'endless-body': {
          res.writeHead(200, { 'content-type': 'application/json' });
          const chunk = Buffer.alloc(64 << 10, 0x61);
          const pump = (): void => {
            while (!res.destroyed && res.write(chunk));
            if (!res.destroyed) res.once('drain', pump);
          };
          pump();
          return;
        }
        case 'huge-error': {
          const unit = `${HOSTILE_TEXT} password=hunter2 `;
          res.writeHead(behaviour.status, { 'content-type': 'text/plain' });
          res.end(unit.repeat(Math.ceil(behaviour.bytes / unit.length)).slice(0, behaviour.bytes));
          return;
        }
        case 'status':
          res.writeHead(behaviour.status, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              kind: 'Status',
              apiVersion: 'v1',
              status: 'Failure',
              code: behaviour.status,
              reason: behaviour.status === 403 ? 'Forbidden' : 'InternalError',
              message: `${HOSTILE_TEXT} ${'m'.repeat(4000)}`,
            }),
          );
          return;
        case 'truncated-json':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ kind: 'List', items: [{ metadata: { name: 'n' } }], padding: 'p'.repeat(200) }).slice(0, behaviour.keep));
          return;
        case 'digest':
          for (const v of behaviour.values) res.appendHeader('docker-content-digest', v);
          res.writeHead(200, { 'content-type': 'application/vnd.oci.image.index.v1+json' });
          res.end(req.method === 'HEAD' ? undefined : (behaviour.body ?? '{}'));
          return;
        case 'drip-token':
          if ((req.url ?? '').startsWith('/token')) {
            res.writeHead(200, { 'content-type': 'application/json' });
            drip(res, behaviour.everyMs, ' ');
            return;
          }
          res.writeHead(401, { 'www-authenticate': `Bearer realm="${self}/token",service="hostile"` });
          res.end();
          return;
      }
    });
  }
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  self = `http://${host}`;
  return {
    url: self,
    host,
    get requests() {
      return requests;
    },
    stop: async () => {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
