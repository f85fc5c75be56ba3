/**
 * A tiny in-memory apiserver on 127.0.0.1 serving the sidecar's calls the way the real one does:
 * GET of a pod, list and watch of pods narrowed by label selector (equality terms) and field
 * selector (`metadata.name`, `metadata.namespace`, `spec.nodeName`), GET/PATCH (strategic merge for
 * metadata maps, JSON patch with test/remove) of one node, and POST of Events, validated as the
 * apiserver validates a core/v1 Event without `eventTime`. With a `token` it answers 401 to a
 * request without that bearer token, as an apiserver without anonymous access does. It records
 * every request so tests and the footprint bench can count API cost. Used by unit tests of the
 * adapters and by bench/footprint.ts; the real apiserver is exercised by test/integration/reconciler.
 *
 * resourceVersion follows the apiserver: one counter across objects; a list returns the current
 * version; a watch from version N replays every change after N still in its window and then
 * streams, a watch from "0" or without a version starts with an ADDED per matching pod, and a
 * version older than the window is answered with a 410 Expired ERROR event. A pod that stops
 * matching a watch's selectors arrives there as DELETED, one that starts matching as ADDED.
 * BOOKMARK events go only to watches that allowed them.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KNode, KPod } from '../src/reconciler/kube-types.js';
import { type JsonPatchOp } from '../src/reconciler/ports.js';
import { ApiError } from '../src/http/api-error.js';
import { mergeNodeMetadata, patchNodeTaints } from './node-patch.js';

/** One recorded request. */
export interface Recorded {
  readonly method: string;
  readonly path: string;
  readonly contentType?: string;
  readonly body?: unknown;
}

type Obj = Record<string, unknown>;
type WatchType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One change of a pod, as the watch cache keeps it. */
interface Change {
  readonly rv: number;
  readonly type: WatchType;
  readonly pod: KPod;
  /** The pod before this change (undefined for ADDED), to tell a watch that it stopped matching. */
  readonly before: KPod | undefined;
}

/** A pod predicate from a list or watch query; undefined when the query is one the fake refuses. */
type Selects = (pod: KPod) => boolean;

interface Watcher {
  readonly res: http.ServerResponse;
  readonly selects: Selects;
  readonly bookmarks: boolean;
}

/** How many pod changes a watch can be resumed across, like the watch cache's window. */
const HISTORY = 1000;

const key = (pod: KPod): string => `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;

/**
 * The predicate of `labelSelector` and `fieldSelector` in namespace `namespace`, or an error
 * message for selectors the real apiserver would refuse for pods (unknown fields) or that the
 * fake does not implement (set-based label terms).
 */
function selector(namespace: string, q: URLSearchParams): Selects | string {
  const terms: ((p: KPod) => boolean)[] = [(p) => p.metadata.namespace === namespace];
  for (const term of (q.get('labelSelector') ?? '').split(',').filter(Boolean)) {
    const m = /^([^!=]+)(==|=|!=)(.*)$/.exec(term);
    if (!m) return `unsupported label selector term "${term}"`;
    const [, k = '', op, v = ''] = m;
    terms.push(op === '!=' ? (p) => p.metadata.labels?.[k] !== v : (p) => p.metadata.labels?.[k] === v);
  }
  for (const term of (q.get('fieldSelector') ?? '').split(',').filter(Boolean)) {
    const m = /^([^!=]+)(==|=|!=)(.*)$/.exec(term);
    if (!m) return `unsupported field selector term "${term}"`;
    const [, field = '', op, v = ''] = m;
    const read: ((p: KPod) => string | undefined) | undefined = {
      'metadata.name': (p: KPod) => p.metadata.name,
      'metadata.namespace': (p: KPod) => p.metadata.namespace,
      'spec.nodeName': (p: KPod) => p.spec?.nodeName ?? '',
    }[field];
    if (read === undefined) return `field label not supported: ${field}`;
    terms.push(op === '!=' ? (p) => read(p) !== v : (p) => read(p) === v);
  }
  return (p) => terms.every((t) => t(p));
}

/** The fake; `start()` listens on an ephemeral loopback port. */
export class FakeApiserver {
  node: KNode;
  readonly requests: Recorded[] = [];
  readonly events: Obj[] = [];
  /** The next N requests fail with 503 (apiserver outage). */
  failNext = 0;
  private rv = 100;
  /** Pods by namespace/name. */
  private readonly store = new Map<string, KPod>();
  /** The pod given to the constructor: {@link pod} and the default of {@link setPod}. */
  private readonly primary: string;
  private readonly history: Change[] = [];
  /** The newest version no longer in {@link history}: a watch from before it gets 410. */
  private compacted = this.rv;
  private readonly watchers = new Set<Watcher>();
  private onWatch: (() => void)[] = [];
  private server: http.Server | undefined;

  /** Bearer tokens a request may carry; undefined: any request is let in. */
  private tokens: ReadonlySet<string> | undefined;
  private readonly timeScale: number;

  /**
   * `options.token`: the bearer token every request must carry (none: any request is let in).
   * `options.timeScale`: how many times faster than the wall clock the client's clock runs (the
   * soak bench's sidecar); a watch's `timeoutSeconds` is served in the client's time, so the
   * watch ends as often as a real apiserver would end it in the life the client lives (default 1).
   */
  constructor(pod: KPod, node: KNode, options: { readonly token?: string; readonly timeScale?: number } = {}) {
    this.tokens = options.token === undefined ? undefined : new Set([options.token]);
    this.timeScale = options.timeScale ?? 1;
    this.primary = key(pod);
    this.setPod(pod);
    this.node = this.bump(node);
  }

  private bump<T extends { metadata: object }>(o: T): T {
    return { ...o, metadata: { ...o.metadata, resourceVersion: String(++this.rv) } };
  }

  get url(): string {
    const a = this.server?.address() as AddressInfo;
    return `http://127.0.0.1:${a.port}`;
  }

  /** The pod given to the constructor, as it is now. */
  get pod(): KPod {
    const p = this.store.get(this.primary);
    if (p === undefined) throw new Error(`pod ${this.primary} was deleted`);
    return p;
  }

  /** Every pod held, in order of creation. */
  pods(): KPod[] {
    return [...this.store.values()];
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
    for (const w of this.watchers) w.res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }

  /**
   * Creates, replaces (as the kubelet would) or deletes a pod, found by its namespace and name, and
   * notifies the watches it matches, before or after. `type` only matters for DELETED: a pod not
   * held yet is ADDED, one held is MODIFIED.
   */
  setPod(pod: KPod, type: 'MODIFIED' | 'DELETED' = 'MODIFIED'): void {
    const k = key(pod);
    const before = this.store.get(k);
    if (type === 'DELETED' && before === undefined) throw new Error(`pod ${k} does not exist`);
    const now = this.bump(pod);
    if (type === 'DELETED') this.store.delete(k);
    else this.store.set(k, now);
    const change: Change = {
      rv: this.rv,
      type: type === 'DELETED' ? 'DELETED' : before === undefined ? 'ADDED' : 'MODIFIED',
      pod: now,
      before,
    };
    this.history.push(change);
    if (this.history.length > HISTORY) this.compacted = this.history.shift()?.rv ?? this.compacted;
    for (const w of this.watchers) this.deliver(w, change);
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that allowed bookmarks. */
  bookmark(): void {
    const line = `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) } } })}\n`;
    for (const w of this.watchers) if (w.bookmarks) w.res.write(line);
  }

  /** Resolves once a watch is open (at once if one is), so a test never sends before it listens. */
  watching(): Promise<void> {
    if (this.watchers.size > 0) return Promise.resolve();
    return new Promise((resolve) => this.onWatch.push(resolve));
  }

  /** The bearer tokens accepted from now on, as while a projected token rotates (old and new, then new). */
  acceptTokens(tokens: readonly string[]): void {
    this.tokens = new Set(tokens);
  }

  /** Ends every open watch as the apiserver's timeout does: the stream just ends. */
  endWatches(): void {
    for (const w of this.watchers) w.res.end();
  }

  /** Ends every open watch with a 410 Expired ERROR event, and forgets the history, as after etcd compaction. */
  expireWatches(): void {
    this.history.length = 0;
    this.compacted = this.rv;
    const line = `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`;
    for (const w of this.watchers) w.res.end(line);
  }

  /** Replaces the node (another writer). */
  setNode(node: KNode): void {
    this.node = this.bump(node);
  }

  /** Writes `change` to a watch as that watch sees it: filtered by its selectors, before and after. */
  private deliver(w: Watcher, change: Change): void {
    const was = change.before !== undefined && w.selects(change.before);
    const is = change.type !== 'DELETED' && w.selects(change.pod);
    const type: WatchType | undefined = is ? (was ? change.type : 'ADDED') : was ? 'DELETED' : undefined;
    if (type !== undefined) w.res.write(`${JSON.stringify({ type, object: change.pod })}\n`);
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
    const status = (code: number, reason: string, message: string): void =>
      send(code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (this.tokens !== undefined && (bearer === undefined || !this.tokens.has(bearer))) {
      return status(401, 'Unauthorized', 'Unauthorized');
    }
    if (this.failNext > 0) {
      this.failNext--;
      return status(503, 'ServiceUnavailable', 'outage');
    }
    const pods = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/.exec(url.pathname);
    const nodePath = `/api/v1/nodes/${this.node.metadata.name}`;
    if (req.method === 'GET' && pods?.[2] !== undefined) {
      const pod = this.store.get(`${pods[1]}/${decodeURIComponent(pods[2])}`);
      return pod === undefined ? status(404, 'NotFound', `pods "${pods[2]}" not found`) : send(200, pod);
    }
    if (req.method === 'GET' && pods !== null) {
      const selects = selector(decodeURIComponent(pods[1] ?? ''), url.searchParams);
      if (typeof selects === 'string') return status(400, 'BadRequest', selects);
      if (url.searchParams.get('watch') === 'true') return this.watch(res, selects, url.searchParams);
      return send(200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(this.rv) },
        items: this.pods().filter(selects),
      });
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
      return status(
        415,
        'UnsupportedMediaType',
        'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json',
      );
    }
    const events = /^\/api\/v1\/namespaces\/([^/]+)\/events$/.exec(url.pathname);
    if (req.method === 'POST' && events !== null) return this.createEvent(decodeURIComponent(events[1] ?? ''), body, send, status);
    return status(404, 'NotFound', `${req.method} ${url.pathname}`);
  }

  /**
   * Creates a core/v1 Event in `namespace` as the apiserver does: the body's namespace must be the
   * path's (400), the name must be new (409), and without `eventTime` the legacy rule holds (422):
   * an Event about a cluster-scoped object (no involvedObject.namespace, a Node) lives in
   * `default`, one about a namespaced object in that object's namespace.
   */
  private createEvent(
    namespace: string,
    body: unknown,
    send: (code: number, o: unknown) => void,
    status: (code: number, reason: string, message: string) => void,
  ): void {
    const e = (body ?? {}) as {
      metadata?: { name?: string; namespace?: string };
      involvedObject?: { namespace?: string };
      eventTime?: unknown;
    };
    const md = e.metadata ?? {};
    if (md.namespace !== undefined && md.namespace !== namespace)
      return status(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    const name = md.name ?? '';
    const invalid = (field: string, detail: string): void => status(422, 'Invalid', `Event "${name}" is invalid: ${field}: ${detail}`);
    if (name === '') return invalid('metadata.name', 'Required value: name or generateName is required');
    const involved = e.involvedObject?.namespace ?? '';
    if (e.eventTime === undefined || e.eventTime === null) {
      const ok = involved === '' ? namespace === 'default' : involved === namespace;
      if (!ok) return invalid('involvedObject.namespace', `Invalid value: "${involved}": does not match event.namespace`);
    }
    const same = (o: Obj): boolean => {
      const m = o['metadata'] as { name?: string; namespace?: string };
      return m.name === name && m.namespace === namespace;
    };
    if (this.events.some(same)) return status(409, 'AlreadyExists', `events "${name}" already exists`);
    const created = this.bump({ ...(body as Obj), metadata: { ...md, namespace } });
    this.events.push(created);
    return send(201, created);
  }

  /** Opens a watch: the replay its resourceVersion asks for, then every change as it happens. */
  private watch(res: http.ServerResponse, selects: Selects, q: URLSearchParams): void {
    const from = q.get('resourceVersion') ?? '';
    const w: Watcher = { res, selects, bookmarks: q.get('allowWatchBookmarks') === 'true' };
    // A version that is not a number is refused before the stream starts; one too old, in it.
    if (from !== '' && !/^\d+$/.test(from)) {
      const message = `pods is invalid: resourceVersion: Invalid value: "${from}": strconv.ParseUint: parsing "${from}": invalid syntax`;
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 422, reason: 'Invalid', message }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    if (from === '' || from === '0') {
      for (const pod of this.pods().filter(selects)) res.write(`${JSON.stringify({ type: 'ADDED', object: pod })}\n`);
    } else {
      const n = Number(from);
      if (n < this.compacted) {
        res.end(
          `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: `too old resource version: ${from} (${this.compacted})` } })}\n`,
        );
        return;
      }
      for (const change of this.history) if (change.rv > n) this.deliver(w, change);
    }
    this.watchers.add(w);
    res.on('close', () => this.watchers.delete(w));
    const timeout = Number(q.get('timeoutSeconds') ?? '0');
    if (timeout > 0) {
      const t = setTimeout(() => res.end(), Math.max(1, (timeout * 1000) / this.timeScale));
      t.unref();
      res.on('close', () => clearTimeout(t));
    }
    for (const cb of this.onWatch.splice(0)) cb();
  }
}
