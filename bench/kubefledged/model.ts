/**
 * A model of kube-fledged v0.10.0's controller, for benchmarks only.
 *
 * kube-fledged cannot be built here: the Go module proxy answers 403 ("not available") for
 * github.com/senthilrch/kube-fledged, for its version list and for v0.10.0. So this process
 * re-implements, from reading its source, exactly the parts that decide when and how a node gets
 * images, and runs them against the harness apiserver as kube-fledged would run out of cluster:
 *
 *  - informers on Nodes (cluster), ImageCaches and Pods (its namespace);
 *  - an ImageCache added with an empty status is processed once (create);
 *  - `--image-cache-refresh-frequency` (default 15m, 0s = never): `wait.Until` runs the refresh
 *    worker at start and then one period after each run; it enqueues every ImageCache whose status
 *    is set and not Processing; nodes are never watched for joins;
 *  - a sync sets status Processing (GET + PUT), lists the nodes matching each cacheSpec entry (an
 *    entry matching no node is skipped; when no entry matches a node the status becomes
 *    NoImagesPulledOrDeleted, "nodeSelector specified did not match any nodes", and the next refresh
 *    picks the cache up again: measured with the real v0.10.0 binary against the harness),
 *    and queues one request per node x image; a single image worker skips pairs whose image string
 *    occurs in the JSON of node.status.images, and creates one Job per remaining pair (the Job
 *    spec below is the one of newImagePullJob: init container `cp /bin/echo /tmp/bin` from the
 *    busybox image, main container the target image running `/tmp/bin/echo`, nodeSelector
 *    kubernetes.io/hostname, toleration operator Exists, backoffLimit 0, restartPolicy Never);
 *  - the status poller waits (1 s polls, up to --image-pull-deadline-duration, 5m) for every Job's
 *    pod to succeed or fail, deletes the Jobs (Background propagation) and writes the final status;
 *  - queues use client-go's default controller rate limiter (a 10 QPS / 100 burst bucket) and the
 *    API client has client-go's default 5 QPS / burst 10, since kube-fledged's main sets neither.
 *
 * Not modelled: purge, the webhook, refresh/purge annotations, update diffs (purge of removed
 * images). Prints JSON lines (refresh ticks, Jobs created, statuses) on stdout and its API request
 * counts on exit. Stops by itself after --max-runtime.
 *
 * Usage: tsx bench/kubefledged/model.ts [--image-cache-refresh-frequency 15m] [--namespace kube-fledged]
 *          [--busybox-image docker.io/senthilrch/busybox:1.35.0] [--max-runtime 30m] [--qps 5 --burst 10]
 */
import { Kube, TokenBucket, type KubeObject } from '../../harness/kube.js';
import { parseDuration } from '../../src/imagecache/duration.js';
import { sleep } from '../../harness/time.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : def;
}
/** A Go-style duration flag (`15m`, `0s`, `1h30m`) in ms, read by the spec's own parser. */
function duration(s: string): number {
  const d = parseDuration(s.trim());
  if ('error' in d) throw new Error(d.error);
  return d.seconds * 1000;
}

const NS = arg('namespace', process.env['KUBEFLEDGED_NAMESPACE'] ?? 'kube-fledged');
const REFRESH_MS = duration(arg('image-cache-refresh-frequency', '15m'));
const DEADLINE_MS = duration(arg('image-pull-deadline-duration', '5m'));
const BUSYBOX = arg('busybox-image', process.env['BUSYBOX_IMAGE'] ?? 'senthilrch/busybox:1.35.0');
const PULL_POLICY = arg('image-pull-policy', 'IfNotPresent');
const MAX_RUNTIME_MS = duration(arg('max-runtime', '30m'));
const kube = new Kube({ limiter: new TokenBucket(Number(arg('qps', '5')), Number(arg('burst', '10'))), userAgent: 'kubefledged-model' });
const IC_PATH = `/apis/kubefledged.io/v1alpha2/namespaces/${NS}/imagecaches`;

function emit(event: string, data: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ event, at: Date.now(), ...data }) + '\n');
}

/** A list+watch cache of one resource, re-listing when the watch ends (bounded retries). */
class Informer {
  readonly items = new Map<string, KubeObject>();
  synced = false;
  private stop: () => void = () => undefined;
  private closed = false;
  constructor(
    private readonly path: string,
    private readonly onUpdate?: (old: KubeObject | undefined, obj: KubeObject, type: string) => void,
  ) {}
  async start(): Promise<void> {
    for (let attempt = 0; attempt < 100 && !this.closed; attempt++) {
      try {
        const l = await kube.list(this.path);
        const fresh = new Map(l.items.map((o) => [key(o), o]));
        for (const [k, o] of fresh) {
          const old = this.items.get(k);
          this.items.set(k, o);
          if (this.synced) this.onUpdate?.(old, o, old ? 'MODIFIED' : 'ADDED');
          else this.onUpdate?.(undefined, o, 'ADDED');
        }
        for (const k of [...this.items.keys()]) if (!fresh.has(k)) this.items.delete(k);
        this.synced = true;
        await new Promise<void>((resolve) => {
          this.stop = kube.watch(
            this.path,
            { resourceVersion: l.metadata.resourceVersion, timeoutSeconds: '300' },
            (type, obj) => {
              if (type === 'BOOKMARK' || type === 'ERROR') return;
              const k = key(obj);
              const old = this.items.get(k);
              if (type === 'DELETED') this.items.delete(k);
              else this.items.set(k, obj);
              this.onUpdate?.(old, obj, type);
            },
            () => resolve(),
          );
        });
      } catch (e) {
        emit('informer-error', { path: this.path, error: (e as Error).message });
        await sleep(1000);
      }
    }
  }
  close(): void {
    this.closed = true;
    this.stop();
  }
}
function key(o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** client-go workqueue with the default controller rate limiter's bucket (10 QPS, burst 100). */
class Queue<T> {
  private readonly items: { at: number; item: T }[] = [];
  private readonly bucket = new TokenBucket(10, 100);
  private wake: (() => void) | undefined;
  addRateLimited(item: T): void {
    this.items.push({ at: Date.now() + this.bucket.reserve(), item });
    this.wake?.();
  }
  async get(): Promise<T> {
    for (;;) {
      const first = this.items[0];
      if (first && first.at <= Date.now()) {
        this.items.shift();
        return first.item;
      }
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, first ? Math.max(1, first.at - Date.now()) : 1000);
      });
      this.wake = undefined;
    }
  }
}

type WorkType = 'create' | 'update' | 'refresh' | 'statusupdate';
interface WorkKey {
  type: WorkType;
  name: string;
  results?: Map<string, Result>;
}
interface ImageWork {
  image?: string;
  node?: KubeObject;
  type: WorkType;
  cache: KubeObject;
}
interface Result {
  work: ImageWork;
  status: 'jobcreated' | 'succeeded' | 'failed' | 'alreadypulled' | 'unknown';
  reason?: string;
}

const workqueue = new Queue<WorkKey>();
const imagequeue = new Queue<ImageWork>();
const imageWorkStatus = new Map<string, Result>();
let fakeJobs = 0;

const nodes = new Informer('/api/v1/nodes');
const caches = new Informer(IC_PATH, (old, obj, type) => {
  if (type === 'ADDED' && !old) {
    if (!obj.status || Object.keys(obj.status).length === 0) workqueue.addRateLimited({ type: 'create', name: obj.metadata.name });
  } else if (type === 'MODIFIED' && old) {
    if (old.status?.status === 'Processing' && JSON.stringify(old.spec) !== JSON.stringify(obj.spec)) return; // dropped, as in #103
    if (JSON.stringify(old.spec) !== JSON.stringify(obj.spec)) workqueue.addRateLimited({ type: 'update', name: obj.metadata.name });
  }
});
const pods = new Informer(`/api/v1/namespaces/${NS}/pods`, (old, pod, type) => {
  if (type !== 'MODIFIED' || !old) return;
  const phase = pod.status?.phase;
  const was = old.status?.phase;
  if ((phase === 'Succeeded' || phase === 'Failed') && was !== 'Succeeded' && was !== 'Failed') {
    const job = pod.metadata.labels?.['job-name'] ?? '';
    const r = imageWorkStatus.get(job);
    if (!r) return;
    r.status = phase === 'Succeeded' ? 'succeeded' : 'failed';
    if (phase === 'Failed') r.reason = pod.status?.containerStatuses?.[0]?.state?.terminated?.reason;
    emit('job-done', { job, node: r.work.node?.metadata.name, image: r.work.image, phase });
  }
});

function matches(node: KubeObject, selector: Record<string, string> | undefined): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => node.metadata.labels?.[k] === v);
}

async function updateStatus(name: string, status: Record<string, unknown>): Promise<void> {
  const ic = await kube.get(`${IC_PATH}/${name}`);
  ic.status = { ...status, ...(status['status'] !== 'Processing' ? { completionTime: new Date().toISOString() } : {}) };
  await kube.put(`${IC_PATH}/${name}`, ic);
  emit('status', { cache: name, status: status['status'], reason: status['reason'] });
}

async function sync(k: WorkKey): Promise<void> {
  if (k.type === 'statusupdate') {
    const results = [...(k.results ?? new Map<string, Result>()).values()];
    const failed = results.filter((r) => r.status === 'failed' || r.status === 'unknown');
    const ic = await kube.get(`${IC_PATH}/${k.name}`);
    await updateStatus(k.name, {
      startTime: ic.status?.startTime,
      reason: ic.status?.reason,
      status: failed.length ? 'Failed' : 'Succeeded',
      message: failed.length
        ? 'Image pull failed for some images. Please see "failures" section'
        : 'All requested images pulled succesfully to respective nodes',
      failures: Object.fromEntries(failed.map((r) => [r.work.image, [{ node: r.work.node?.metadata.name, reason: r.reason ?? r.status }]])),
    });
    return;
  }
  const cached = caches.items.get(`${NS}/${k.name}`);
  if (!cached) throw new Error(`imagecache ${k.name} not found`);
  const reason = { create: 'ImageCacheCreate', update: 'ImageCacheUpdate', refresh: 'ImageCacheRefresh' }[k.type];
  await kube.get(`${IC_PATH}/${k.name}`);
  await updateStatus(k.name, {
    status: 'Processing',
    reason,
    message: 'Images are being pulled on to the nodes',
    startTime: new Date().toISOString(),
    failures: {},
  });
  const cache = await kube.get(`${IC_PATH}/${k.name}`);
  let queued = 0;
  for (const entry of (cached.spec?.cacheSpec ?? []) as { images: string[]; nodeSelector?: Record<string, string> }[]) {
    const selected = [...nodes.items.values()].filter((n) => matches(n, entry.nodeSelector));
    if (selected.length === 0) emit('no-nodes', { cache: k.name, nodeSelector: entry.nodeSelector ?? {} });
    for (const node of selected)
      for (const image of entry.images) {
        imagequeue.addRateLimited({ image, node, type: k.type, cache });
        queued++;
      }
  }
  if (queued === 0) {
    // Not Processing: the refresh worker enqueues the cache again on its next tick.
    await updateStatus(k.name, {
      startTime: cache.status?.startTime,
      reason,
      status: 'NoImagesPulledOrDeleted',
      message: 'nodeSelector specified did not match any nodes',
    });
    return;
  }
  imagequeue.addRateLimited({ type: k.type, cache });
}

function needsPull(image: string, node: KubeObject): boolean {
  if (PULL_POLICY !== 'IfNotPresent') return true;
  if (!image.includes(':') && !image.includes('@sha')) return true;
  if (image.includes(':latest')) return true;
  return !JSON.stringify(node.status?.images ?? []).includes(image);
}

function pullJob(cache: KubeObject, image: string, node: KubeObject): KubeObject {
  const labels = {
    app: 'kubefledged',
    kubefledged: 'kubefledged-image-manager',
    imagecache: cache.metadata.name,
    controller: 'kubefledged',
  };
  let pullPolicy = 'IfNotPresent';
  if (PULL_POLICY === 'Always' || image.includes(':latest') || !image.includes(':')) pullPolicy = 'Always';
  const mount = [{ name: 'tmp-bin', mountPath: '/tmp/bin' }];
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: '',
      generateName: `${cache.metadata.name}-`,
      namespace: NS,
      labels,
      ownerReferences: [
        {
          apiVersion: 'kubefledged.io/v1alpha2',
          kind: 'ImageCache',
          name: cache.metadata.name,
          uid: cache.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: 3600,
      template: {
        metadata: { namespace: NS, labels },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': node.metadata.labels?.['kubernetes.io/hostname'] ?? node.metadata.name },
          initContainers: [
            {
              name: 'busybox',
              image: BUSYBOX,
              command: ['cp', '/bin/echo', '/tmp/bin'],
              volumeMounts: mount,
              imagePullPolicy: 'IfNotPresent',
            },
          ],
          containers: [
            {
              name: 'imagepuller',
              image,
              command: ['/tmp/bin/echo', 'Image pulled successfully!'],
              volumeMounts: mount,
              imagePullPolicy: pullPolicy,
            },
          ],
          volumes: [{ name: 'tmp-bin', emptyDir: {} }],
          restartPolicy: 'Never',
          ...(cache.spec?.imagePullSecrets ? { imagePullSecrets: cache.spec.imagePullSecrets } : {}),
          tolerations: [{ operator: 'Exists' }],
        },
      },
    },
  };
}

async function statusPoller(cacheName: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  const mine = (): [string, Result][] => [...imageWorkStatus].filter(([, r]) => r.work.cache.metadata.name === cacheName);
  while (Date.now() < deadline && mine().some(([, r]) => r.status === 'jobcreated')) await sleep(1000);
  for (const [, r] of mine()) if (r.status === 'jobcreated') r.status = 'failed';
  const results = new Map(mine());
  for (const [job] of results) {
    imageWorkStatus.delete(job);
    if (!job.startsWith('fakejob-'))
      await kube
        .delete(`/apis/batch/v1/namespaces/${NS}/jobs/${job}`)
        .catch((e: unknown) => emit('error', { error: (e as Error).message }));
  }
  workqueue.addRateLimited({ type: 'statusupdate', name: cacheName, results });
}

async function imageWorker(): Promise<void> {
  for (;;) {
    const w = await imagequeue.get();
    try {
      if (!w.image || !w.node) {
        void statusPoller(w.cache.metadata.name);
        continue;
      }
      if (needsPull(w.image, w.node)) {
        const job = await kube.create(`/apis/batch/v1/namespaces/${NS}/jobs`, pullJob(w.cache, w.image, w.node));
        imageWorkStatus.set(job.metadata.name, { work: w, status: 'jobcreated' });
        emit('job-created', { job: job.metadata.name, node: w.node.metadata.name, image: w.image });
      } else {
        imageWorkStatus.set(`fakejob-${fakeJobs++}`, { work: w, status: 'alreadypulled' });
      }
    } catch (e) {
      emit('error', { error: (e as Error).message });
    }
  }
}

async function worker(): Promise<void> {
  for (;;) {
    const k = await workqueue.get();
    try {
      await sync(k);
    } catch (e) {
      emit('sync-error', { cache: k.name, type: k.type, error: (e as Error).message });
    }
  }
}

function refreshWorker(): void {
  emit('refresh');
  for (const ic of caches.items.values()) {
    const s = ic.status ?? {};
    if (Object.keys(s).length === 0) continue;
    if (s.status === 'Processing') continue;
    if (s.status === 'Failed' && s.reason === 'CacheSpecValidationFailed') continue;
    if (s.reason === 'ImageCachePurge') continue;
    workqueue.addRateLimited({ type: 'refresh', name: ic.metadata.name });
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const stopAt = started + MAX_RUNTIME_MS;
  // Pre-flight checks: dangling Jobs are deleted, Processing caches marked Aborted.
  for (const j of (await kube.list(`/apis/batch/v1/namespaces/${NS}/jobs`)).items)
    await kube.delete(`/apis/batch/v1/namespaces/${NS}/jobs/${j.metadata.name}`);
  for (const ic of (await kube.list(IC_PATH)).items) {
    if (ic.status?.status === 'Processing')
      await updateStatus(ic.metadata.name, { ...ic.status, status: 'Aborted', reason: 'ImagePullAborted' });
  }
  void nodes.start();
  void caches.start();
  void pods.start();
  while (!(nodes.synced && caches.synced && pods.synced)) await sleep(50);
  emit('started', { refreshMs: REFRESH_MS, namespace: NS });
  void worker();
  void imageWorker();
  let timer: NodeJS.Timeout | undefined;
  if (REFRESH_MS > 0) {
    // wait.Until(f, period): f now, then period after each return (sliding).
    const tick = (): void => {
      refreshWorker();
      timer = setTimeout(tick, REFRESH_MS);
    };
    tick();
  }
  let stopping = false;
  const stop = (why: string): void => {
    if (stopping) return;
    stopping = true;
    if (timer) clearTimeout(timer);
    nodes.close();
    caches.close();
    pods.close();
    emit('stopped', { why, apiRequests: Object.fromEntries(kube.counts) });
    kube.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  setTimeout(() => stop('max-runtime'), Math.max(0, stopAt - Date.now()));
}

await main();
