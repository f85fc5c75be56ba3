/** The ports between the controller loop and the outside world; tests implement them with fakes. */
import type { KNode, KPod } from './kube-types.js';
import type { EventIntent } from '../contract/events.js';

export interface PodWatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  readonly pod: KPod;
}

/**
 * Our own pod, by `fieldSelector=metadata.name=<pod>`: a list, not a GET, since a GET's
 * resourceVersion may lie before the watch window and be answered 410 every time.
 */
export interface PodSource {
  /** Our pod as listed now (undefined when the list holds none), and the resourceVersion to watch from. */
  list(): Promise<{ readonly pod: KPod | undefined; readonly resourceVersion: string }>;
  /** Streams events after `resourceVersion` until the stream ends; ApiError 410 means list again. */
  watch(resourceVersion: string, onEvent: (e: PodWatchEvent) => void, signal: AbortSignal): Promise<void>;
}

/** Every pod of our pool on our node but our own, by pool-member label, `spec.nodeName` and name; never a cluster-wide list. */
export interface PoolPodSource {
  list(): Promise<{ readonly pods: readonly KPod[]; readonly resourceVersion: string }>;
  /** As {@link PodSource.watch}: ApiError 410 means list again. */
  watch(resourceVersion: string, onEvent: (e: PodWatchEvent) => void, signal: AbortSignal): Promise<void>;
}

/** RFC 6902. */
export interface JsonPatchOp {
  readonly op: string;
  readonly path: string;
  readonly value?: unknown;
}

/** Our own node: GET and two kinds of PATCH. Each returns the node after the call. */
export interface NodePort {
  get(): Promise<KNode>;
  /** `application/strategic-merge-patch+json`. */
  patchMerge(body: object): Promise<KNode>;
  /** `application/json-patch+json`; a failed `test` rejects with ApiError 422 (or 409). */
  patchJson(ops: readonly JsonPatchOp[]): Promise<KNode>;
}

/** Posts Events about the node. Best effort: a lost Event never blocks a reconcile. */
export interface EventSink {
  emit(node: KNode, e: EventIntent): Promise<void>;
}

/** Time, injectable for a fake clock. */
export interface Clock {
  now(): number;
  /** Resolves after `ms` or when `signal` aborts, whichever is first; never rejects. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /** In [0, 1), for jitter. */
  random(): number;
}

/** Resolves the digest a tag points to now (HEAD manifest), for the moved-tag refresh. */
export interface Registry {
  digest(image: string): Promise<string>;
}

/** Restarts one image container of our pod so the kubelet pulls its tag again. */
export interface Restarter {
  /** Sets `container`'s image to `image` (tag@digest); the kubelet restarts that container alone. */
  restart(container: string, image: string): Promise<void>;
}

/** Structured logging; the adapter writes one JSON object per line to stderr. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** The fail-safe's apiserver calls: a bounded paged node list, holder pods per node, a guarded patch. */
export interface FailsafeKube {
  listNodes(): Promise<readonly KNode[]>;
  holdersOn(node: string): Promise<readonly KPod[]>;
  /** As {@link NodePort.patchJson}, on the node `name`. */
  patchNode(name: string, ops: readonly JsonPatchOp[]): Promise<KNode>;
}
