/**
 * In-memory fakes of the apiserver ports (our pod, our node, Events), for driving the controller
 * under the fake clock: every call resolves in microtasks, so nothing but the clock makes it wait.
 * The node semantics (strategic merge of label and annotation maps, JSON patch with `test` on
 * taints) are shared with the HTTP fake apiserver, which serves them over loopback to the adapters.
 */
import type { KNode, KPod } from '../../src/reconciler/kube-types.js';
import { mergeNodeMetadata, patchNodeTaints } from '../../harness/node-patch.js';
import { type EventSink, type NodePort, type PodSource, type PodWatchEvent, type PoolPodSource } from '../../src/reconciler/ports.js';
import { ApiError } from '../../src/http/api-error.js';
import type { EventIntent } from '../../src/contract/events.js';

interface Watcher {
  readonly onEvent: (e: PodWatchEvent) => void;
  readonly end: (e?: ApiError) => void;
}

/** One pod, one node and the Events posted about it, behind the three apiserver ports. */
export class FakeKube {
  pod: KPod;
  node: KNode;
  /** Every call, as `<verb> <object>`, in order. */
  readonly calls: string[] = [];
  readonly events: EventIntent[] = [];
  /** The next N calls fail with 503 (apiserver outage). */
  failNext = 0;
  /** Called before every call; may wait (a slow apiserver) or throw (an error) instead of answering. */
  before: (call: string) => Promise<void> = async () => {};
  private rv = 100;
  private readonly watchers = new Set<Watcher>();
  private readonly poolWatchers = new Set<Watcher>();
  /** The pool's other pods on the node (burst pullers), by name, as the member list shows them. */
  readonly peers = new Map<string, KPod>();

  readonly pods: PodSource = {
    list: () => this.call('LIST pod', () => ({ pod: this.pod, resourceVersion: String(this.rv) })),
    watch: async (_rv, onEvent, signal) => {
      await this.call('WATCH pod', () => undefined);
      return this.open(this.watchers, onEvent, signal);
    },
  };

  /**
   * The member list and watch. The list holds our own pod too, which the adapter's field selector
   * leaves out, as a server that ignored that term would: the controller must drop it itself.
   */
  readonly poolPods: PoolPodSource = {
    list: () => this.call('LIST pool pods', () => ({ pods: [this.pod, ...this.peers.values()], resourceVersion: String(this.rv) })),
    watch: async (_rv, onEvent, signal) => {
      await this.call('WATCH pool pods', () => undefined);
      return this.open(this.poolWatchers, onEvent, signal);
    },
  };

  /** A watch open until aborted (resolves) or expired (rejects), like the adapter's stream. */
  private open(set: Set<Watcher>, onEvent: (e: PodWatchEvent) => void, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted || this.endWatchesAtOnce) return resolve();
      if (this.expireWatchesAtOnce) return reject(new ApiError(410, 'too old resource version', 'Expired'));
      const w: Watcher = {
        onEvent,
        end: (e) => {
          set.delete(w);
          signal.removeEventListener('abort', onAbort);
          if (e) reject(e);
          else resolve();
        },
      };
      const onAbort = (): void => w.end();
      set.add(w);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  readonly nodes: NodePort = {
    get: () => this.call('GET node', () => this.node),
    patchMerge: (body) => this.call('PATCH node merge', () => (this.node = this.bump(mergeNodeMetadata(this.node, body)))),
    patchJson: (ops) => this.call('PATCH node json', () => (this.node = this.bump(patchNodeTaints(this.node, ops)))),
  };

  readonly eventSink: EventSink = {
    emit: (_node, e) => this.call('POST event', () => void this.events.push(e)),
  };

  constructor(pod: KPod, node: KNode) {
    this.pod = this.bump(pod);
    this.node = this.bump(node);
  }

  /** The write calls, in order. */
  writes(): string[] {
    return this.calls.filter((c) => c.startsWith('PATCH') || c.startsWith('POST'));
  }

  /** Replaces the pod (as the kubelet would) and delivers the event to every watch at once. */
  setPod(pod: KPod, type: 'MODIFIED' | 'DELETED' = 'MODIFIED'): void {
    this.pod = this.bump(pod);
    for (const w of this.watchers) w.onEvent({ type, pod: this.pod });
  }

  /** Adds, replaces or deletes a puller pod and delivers the event to every member watch. */
  setPeer(pod: KPod, type: 'ADDED' | 'MODIFIED' | 'DELETED' = 'MODIFIED'): void {
    const name = pod.metadata.name ?? '';
    const bumped = this.bump(pod);
    if (type === 'DELETED') this.peers.delete(name);
    else this.peers.set(name, bumped);
    for (const w of this.poolWatchers) w.onEvent({ type, pod: bumped });
  }

  /** Every watch opened from now on ends as soon as it opens (a server that closes them at once). */
  endWatchesAtOnce = false;

  /**
   * Every watch opened from now on is answered 410 as soon as it opens, whatever version it asks
   * for (a server whose lists answer versions its watch window no longer holds).
   */
  expireWatchesAtOnce = false;

  /** Ends every open watch as a server's timeout does (the stream just ends). */
  endWatches(): void {
    for (const w of [...this.watchers, ...this.poolWatchers]) w.end();
  }

  /** Ends every open watch with 410 Expired, as after etcd compaction. */
  expireWatches(): void {
    for (const w of [...this.watchers, ...this.poolWatchers]) w.end(new ApiError(410, 'too old resource version', 'Expired'));
  }

  private bump<T extends { metadata: object }>(o: T): T {
    return { ...o, metadata: { ...o.metadata, resourceVersion: String(++this.rv) } };
  }

  private async call<T>(name: string, answer: () => T): Promise<T> {
    this.calls.push(name);
    await this.before(name);
    if (this.failNext > 0) {
      this.failNext--;
      throw new ApiError(503, `${name}: outage`, 'ServiceUnavailable');
    }
    return answer();
  }
}
