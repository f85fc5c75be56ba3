/** Adapters of the apiserver ports: every path names our own pod or node, or our pool's pods on our node. */
import fs from 'node:fs';
import { FAILSAFE_MAX_PAGES, FAILSAFE_NODE_PAGE } from '../../contract/failsafe.js';
import { EVENTS_NAMESPACE, LABEL_POOL, SERVICE_ACCOUNT_MOUNT } from '../../contract/names.js';
import { poolMembersQuery } from '../../contract/roles.js';
import type { ReconcilerConfig } from '../../contract/sidecar-env.js';
import type { KNode, KPod, KTaint } from '../kube-types.js';
import type { EventSink, FailsafeKube, JsonPatchOp, NodePort, PodSource, PodWatchEvent, PoolPodSource, Restarter } from '../ports.js';
import { EVENT_COMPONENT, EVENT_TYPE, type EventIntent } from '../../contract/events.js';
import type { Endpoint, KubeHttp } from '../../http/client.js';

/** The in-cluster endpoint; the projected token is re-read on every request, as the kubelet rotates it. */
export function inClusterEndpoint(env: Readonly<Record<string, string | undefined>>, saDir = SERVICE_ACCOUNT_MOUNT): Endpoint {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host) throw new Error('KUBERNETES_SERVICE_HOST is not set: not running in a cluster');
  const h = host.includes(':') ? `[${host}]` : host;
  const tokenFile = `${saDir}/token`;
  let cached: { at: number; token: string } | undefined;
  return {
    server: `https://${h}:${port}`,
    ca: fs.readFileSync(`${saDir}/ca.crt`),
    token: () => {
      // Re-read at most every 10 s: the kubelet rewrites the file well before expiry.
      const now = Date.now();
      if (!cached || now - cached.at > 10_000) cached = { at: now, token: fs.readFileSync(tokenFile, 'utf8').trim() };
      return cached.token;
    },
  };
}

const enc = encodeURIComponent;

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined);
/** `src` with only `keys` (absent ones left out). */
function pick(src: Json | undefined, keys: readonly string[]): Json | undefined {
  if (!src) return undefined;
  const out: Json = {};
  for (const k of keys) if (src[k] !== undefined) out[k] = src[k];
  return out;
}
/** Each element of the list `v` with only `keys`; undefined when `v` is not a list. */
const pickAll = (v: unknown, keys: readonly string[]): Json[] | undefined =>
  Array.isArray(v) ? v.map((x) => pick(obj(x), keys) ?? {}) : undefined;

const META = ['name', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'labels', 'annotations'] as const;
const CONTAINER = ['name', 'image', 'imagePullPolicy', 'restartPolicy'] as const;
const CONTAINER_STATUS = ['name', 'image', 'imageID', 'containerID', 'restartCount', 'started', 'state', 'lastState'] as const;

/** The pod with only the fields the sidecar reads, so the retained object stays small. */
export function projectPod(raw: unknown): KPod {
  const p = obj(raw) ?? {};
  const spec = obj(p['spec']);
  const status = obj(p['status']);
  const pod: Json = { metadata: pick(obj(p['metadata']), META) ?? {} };
  if (spec) pod['spec'] = { ...pick(spec, ['nodeName']), ...lists(spec, { containers: CONTAINER, initContainers: CONTAINER }) };
  if (status)
    pod['status'] = {
      ...pick(status, ['phase', 'startTime']),
      ...lists(status, { containerStatuses: CONTAINER_STATUS, initContainerStatuses: CONTAINER_STATUS }),
    };
  return pod as unknown as KPod;
}

/** For each `key` of `src` that holds a list: that list, with `fields` of each element. */
function lists(src: Json, fields: Record<string, readonly string[]>): Json {
  const out: Json = {};
  for (const [key, keys] of Object.entries(fields)) {
    const l = pickAll(src[key], keys);
    if (l) out[key] = l;
  }
  return out;
}

/** Pods of a namespace that `query` selects: the items and the list's resourceVersion. */
async function listPods(http: KubeHttp, namespace: string, query: URLSearchParams): Promise<{ items: KPod[]; resourceVersion: string }> {
  const raw = await http.json<{ metadata?: { resourceVersion?: string }; items?: unknown[] }>(
    'GET',
    `/api/v1/namespaces/${enc(namespace)}/pods?${query.toString()}`,
  );
  return { items: (raw.items ?? []).map(projectPod), resourceVersion: raw.metadata?.resourceVersion ?? '0' };
}

/** A watch of the pods `query` selects from `resourceVersion`, with bookmarks, ended by the server within 290 s. */
function watchPods(
  http: KubeHttp,
  namespace: string,
  query: (extra: Record<string, string>) => URLSearchParams,
  resourceVersion: string,
  onEvent: (e: PodWatchEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const q = query({ watch: 'true', resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: '290' });
  return http.watch(
    `/api/v1/namespaces/${enc(namespace)}/pods?${q.toString()}`,
    (o) => onEvent({ type: o.type as PodWatchEvent['type'], pod: projectPod(o.object) }),
    signal,
  );
}

/** Our pod: a list and a watch with `fieldSelector=metadata.name=<pod>` (see {@link PodSource}). */
export class KubePodSource implements PodSource {
  constructor(
    private readonly http: KubeHttp,
    private readonly namespace: string,
    private readonly name: string,
  ) {}
  private readonly query = (extra: Record<string, string>): URLSearchParams =>
    new URLSearchParams({ fieldSelector: `metadata.name=${this.name}`, ...extra });
  async list(): Promise<{ pod: KPod | undefined; resourceVersion: string }> {
    const { items, resourceVersion } = await listPods(this.http, this.namespace, this.query({}));
    return { pod: items[0], resourceVersion };
  }
  watch(resourceVersion: string, onEvent: (e: PodWatchEvent) => void, signal: AbortSignal): Promise<void> {
    return watchPods(this.http, this.namespace, this.query, resourceVersion, onEvent, signal);
  }
}

/** Our pool's pods on our node but our own pod, which has its own watch: parsing its events twice is waste. */
export class KubePoolPodSource implements PoolPodSource {
  constructor(
    private readonly http: KubeHttp,
    private readonly namespace: string,
    private readonly pool: string,
    private readonly node: string,
    private readonly self: string,
  ) {}
  private readonly query = (extra: Record<string, string>): URLSearchParams =>
    new URLSearchParams({
      labelSelector: poolMembersQuery(this.pool),
      fieldSelector: `spec.nodeName=${this.node},metadata.name!=${this.self}`,
      ...extra,
    });
  async list(): Promise<{ pods: KPod[]; resourceVersion: string }> {
    const { items, resourceVersion } = await listPods(this.http, this.namespace, this.query({}));
    return { pods: items, resourceVersion };
  }
  watch(resourceVersion: string, onEvent: (e: PodWatchEvent) => void, signal: AbortSignal): Promise<void> {
    return watchPods(this.http, this.namespace, this.query, resourceVersion, onEvent, signal);
  }
}

/** Restarts an image container of our own pod by setting its image (`tag@digest`) with a strategic-merge PATCH. */
export class KubePodImages implements Restarter {
  constructor(
    private readonly http: KubeHttp,
    private readonly namespace: string,
    private readonly name: string,
  ) {}
  async restart(container: string, image: string): Promise<void> {
    await this.http.json(
      'PATCH',
      `/api/v1/namespaces/${enc(this.namespace)}/pods/${enc(this.name)}`,
      { spec: { containers: [{ name: container, image }] } },
      'application/strategic-merge-patch+json',
    );
  }
}

/** Our node: GET, strategic-merge PATCH (labels/annotations), JSON PATCH (taints). */
export class KubeNodePort implements NodePort {
  constructor(
    private readonly http: KubeHttp,
    private readonly name: string,
  ) {}
  private get path(): string {
    return `/api/v1/nodes/${enc(this.name)}`;
  }
  get(): Promise<KNode> {
    return this.http.json<KNode>('GET', this.path);
  }
  patchMerge(body: object): Promise<KNode> {
    return this.http.json<KNode>('PATCH', this.path, body, 'application/strategic-merge-patch+json');
  }
  patchJson(ops: readonly JsonPatchOp[]): Promise<KNode> {
    return this.http.json<KNode>('PATCH', this.path, ops, 'application/json-patch+json');
  }
}

/** A node with only what the fail-safe reads: identity, creation, labels and taints (verbatim). */
export function projectNode(raw: unknown): KNode {
  const n = obj(raw) ?? {};
  const taints = obj(n['spec'])?.['taints'];
  return {
    metadata: pick(obj(n['metadata']), ['name', 'uid', 'creationTimestamp', 'labels']) ?? {},
    ...(Array.isArray(taints) ? { spec: { taints: taints as KTaint[] } } : {}),
  };
}

/** The fail-safe's apiserver calls: a bounded paged node list, holder pods per node and pool namespace, a node patch. */
export class KubeFailsafe implements FailsafeKube {
  constructor(
    private readonly http: KubeHttp,
    private readonly namespaces: () => readonly string[],
  ) {}
  async listNodes(): Promise<KNode[]> {
    const nodes: KNode[] = [];
    let next: string | undefined;
    for (let page = 0; page < FAILSAFE_MAX_PAGES; page++) {
      const q = new URLSearchParams({ limit: String(FAILSAFE_NODE_PAGE), ...(next ? { continue: next } : {}) });
      const raw = await this.http.json<{ metadata?: { continue?: string }; items?: unknown[] }>('GET', `/api/v1/nodes?${q.toString()}`);
      nodes.push(...(raw.items ?? []).map(projectNode));
      next = raw.metadata?.continue;
      if (!next) break;
    }
    return nodes;
  }
  async holdersOn(node: string): Promise<KPod[]> {
    const q = new URLSearchParams({ labelSelector: LABEL_POOL, fieldSelector: `spec.nodeName=${node}` }).toString();
    const pods: KPod[] = [];
    for (const ns of this.namespaces()) {
      const raw = await this.http.json<{ items?: unknown[] }>('GET', `/api/v1/namespaces/${enc(ns)}/pods?${q}`);
      pods.push(...(raw.items ?? []).map(projectPod));
    }
    return pods;
  }
  patchNode(name: string, ops: readonly JsonPatchOp[]): Promise<KNode> {
    return new KubeNodePort(this.http, name).patchJson(ops);
  }
}

/** core/v1 Events about the Node, named `<pod>.<hex ms>` like client-go's recorder: only ever created. */
export class KubeEventSink implements EventSink {
  private seq = 0;
  constructor(
    private readonly http: KubeHttp,
    private readonly config: Pick<ReconcilerConfig, 'podName' | 'nodeName'>,
    private readonly now: () => number,
  ) {}
  async emit(node: KNode, e: EventIntent): Promise<void> {
    const t = new Date(this.now()).toISOString();
    const name = `${this.config.podName}.${this.now().toString(16)}${(this.seq++ % 16).toString(16)}`;
    await this.http.json('POST', `/api/v1/namespaces/${EVENTS_NAMESPACE}/events`, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: EVENTS_NAMESPACE },
      involvedObject: {
        apiVersion: 'v1',
        kind: 'Node',
        name: node.metadata.name ?? this.config.nodeName,
        ...(node.metadata.uid ? { uid: node.metadata.uid } : {}),
      },
      reason: e.reason,
      message: e.message,
      type: EVENT_TYPE[e.reason],
      source: { component: EVENT_COMPONENT, host: this.config.nodeName },
      reportingComponent: EVENT_COMPONENT,
      reportingInstance: this.config.podName,
      firstTimestamp: t,
      lastTimestamp: t,
      count: 1,
    });
  }
}
