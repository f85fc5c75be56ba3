/**
 * A tiny in-memory apiserver on 127.0.0.1 serving exactly the sidecar's calls: GET/watch of one
 * pod, GET/PATCH (strategic merge for metadata maps, JSON patch with test/remove) of one node,
 * POST of Events. It records every request so tests and the footprint bench can count API cost.
 * Used by unit tests of the adapters and by bench/footprint.ts; the real apiserver is exercised by
 * test/integration/reconciler.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KNode, KPod } from '../src/reconciler/kube-types.js';
import { ApiError, type JsonPatchOp } from '../src/reconciler/ports.js';
import { mergeNodeMetadata, patchNodeTaints } from './node-patch.js';

/** One recorded request. */
export interface Recorded {
  readonly method: string;
  readonly path: string;
  readonly contentType?: string;
  readonly body?: unknown;
}

type Obj = Record<string, unknown>;

/** The fake; `start()` listens on an ephemeral loopback port. */
export class FakeApiserver {
  pod: KPod;
  node: KNode;
  readonly requests: Recorded[] = [];
  readonly events: Obj[] = [];
  /** The next N requests fail with 503 (apiserver outage). */
  failNext = 0;
  private rv = 100;
  private watchers = new Set<http.ServerResponse>();
  private onWatch: (() => void)[] = [];
  private server: http.Server | undefined;

  constructor(pod: KPod, node: KNode) {
    this.pod = this.bump(pod);
    this.node = this.bump(node);
  }

  private bump<T extends { metadata: object }>(o: T): T {
    return { ...o, metadata: { ...o.metadata, resourceVersion: String(++this.rv) } };
  }

  get url(): string {
    const a = this.server?.address() as AddressInfo;
    return `http://127.0.0.1:${a.port}`;
  }

  /** Writes counted per kind. */
  writes(): Recorded[] {
    return this.requests.filter((r) => r.method === 'PATCH' || r.method === 'POST' || r.method === 'PUT' || r.method === 'DELETE');
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    return this;
  }

  async stop(): Promise<void> {
    for (const w of this.watchers) w.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }

  /** Replaces the pod (as the kubelet would) and notifies watchers. */
  setPod(pod: KPod, type: 'MODIFIED' | 'DELETED' = 'MODIFIED'): void {
    this.pod = this.bump(pod);
    const line = `${JSON.stringify({ type, object: this.pod })}\n`;
    for (const w of this.watchers) w.write(line);
  }

  /** Resolves once a watch is open (at once if one is), so a test never sends before it listens. */
  watching(): Promise<void> {
    if (this.watchers.size > 0) return Promise.resolve();
    return new Promise((resolve) => this.onWatch.push(resolve));
  }

  /** Ends every open watch with a 410 Expired ERROR event, as after etcd compaction. */
  expireWatches(): void {
    const line = `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`;
    for (const w of this.watchers) w.end(line);
  }

  /** Replaces the node (another writer). */
  setNode(node: KNode): void {
    this.node = this.bump(node);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    const body = text ? (JSON.parse(text) as unknown) : undefined;
    this.requests.push({
      method: req.method ?? '',
      path: url.pathname + url.search,
      ...(req.headers['content-type'] ? { contentType: req.headers['content-type'] } : {}),
      ...(body !== undefined ? { body } : {}),
    });
    const send = (code: number, o: unknown): void => {
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(o));
    };
    if (this.failNext > 0) {
      this.failNext--;
      return send(503, { kind: 'Status', code: 503, reason: 'ServiceUnavailable', message: 'outage' });
    }
    const podPath = `/api/v1/namespaces/${this.pod.metadata.namespace}/pods`;
    const nodePath = `/api/v1/nodes/${this.node.metadata.name}`;
    if (req.method === 'GET' && url.pathname === `${podPath}/${this.pod.metadata.name}`) return send(200, this.pod);
    if (req.method === 'GET' && url.pathname === podPath && url.searchParams.get('watch') === null) {
      // The one list the sidecar may make: its pool's pods on its node.
      const selects =
        url.searchParams.get('labelSelector')?.startsWith('prewarm.dev/pool-member=') &&
        url.searchParams.get('fieldSelector') === `spec.nodeName=${this.node.metadata.name}`;
      if (!selects) return send(400, { code: 400, message: 'a list must select the pool members on this node' });
      return send(200, { kind: 'PodList', metadata: { resourceVersion: '9' }, items: [this.pod] });
    }
    if (req.method === 'GET' && url.pathname === podPath && url.searchParams.get('watch') === 'true') {
      if (url.searchParams.get('fieldSelector') !== `metadata.name=${this.pod.metadata.name}`)
        return send(400, { code: 400, message: 'watch must select one pod' });
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.flushHeaders();
      this.watchers.add(res);
      res.on('close', () => this.watchers.delete(res));
      for (const w of this.onWatch.splice(0)) w();
      return;
    }
    if (req.method === 'GET' && url.pathname === nodePath) return send(200, this.node);
    if (req.method === 'PATCH' && url.pathname === nodePath) {
      const ct = req.headers['content-type'];
      if (ct === 'application/strategic-merge-patch+json' || ct === 'application/merge-patch+json') {
        this.node = this.bump(mergeNodeMetadata(this.node, body));
        return send(200, this.node);
      }
      if (ct === 'application/json-patch+json') {
        try {
          this.node = this.bump(patchNodeTaints(this.node, body as JsonPatchOp[]));
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
          return send(e.code, { code: e.code, ...(e.reason ? { reason: e.reason } : {}), message: e.message });
        }
        return send(200, this.node);
      }
      return send(415, { code: 415, message: `unsupported ${ct}` });
    }
    if (req.method === 'POST' && url.pathname === '/api/v1/namespaces/default/events') {
      this.events.push(body as Obj);
      return send(201, body);
    }
    return send(404, { code: 404, reason: 'NotFound', message: `${req.method} ${url.pathname}` });
  }
}
